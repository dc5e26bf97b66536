"""`backup` and `restore`: a consistent copy of a live index, taken while writes go on, and
putting it back as a new index. The library verbs behind `ragloom backup` / `ragloom restore`.

A backup is a folder: `ragloom-backup.json` (what it holds, a checksum a file) and the copy
itself (the embedded store: the database file and its segment files, an index that opens as
it is; PostgreSQL: one binary COPY file per table of ragloom's schema). It is built under a
hidden name and renamed into place when complete.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ragloom.errors import InputError
from ragloom.operations.manifest import Manifest
from ragloom.operations.sqlite_backup import backup_sqlite, restore_sqlite
from ragloom.operations.staging import staged_folder
from ragloom.store.base import Store
from ragloom.store.migrate import migrate
from ragloom.store.open import is_url, open_store
from ragloom.store.sqlite.store import SQLiteStore

Progress = Callable[[str, int, int], None]  # (what, done, total)
BACKUP_HINT = "choose a new destination: a backup is never written over another"


def backup(
    source: str | Path | Store | Any, dest: str | Path, on_progress: Progress | None = None
) -> Manifest:
    """Copy the index at `source` (a path, a URL, an open `Index` or store) into the new
    folder `dest`; returns its manifest. Writers and searches go on meanwhile."""
    started = time.monotonic()
    with store_of(source) as store, staged_folder(Path(dest), "backup", BACKUP_HINT) as folder:
        if isinstance(store, SQLiteStore):
            manifest = backup_sqlite(store, folder, on_progress)
        else:  # (imported here: PostgreSQL needs the postgres extra)
            from ragloom.operations.postgres_backup import backup_postgres

            manifest = backup_postgres(store, folder, on_progress)
        manifest.details["seconds"] = round(time.monotonic() - started, 3)
        manifest.write(folder)
    return manifest


def restore(
    backup_folder: str | Path, target: str | Path, on_progress: Progress | None = None
) -> Manifest:
    """Write the backup in `backup_folder` as a new index at `target` (a path or a URL whose
    schema holds no index); the backup is checked against its checksums first."""
    folder = Path(backup_folder)
    manifest = Manifest.read(folder)
    manifest.verify(folder)
    if manifest.store == "sqlite":
        if is_url(target):
            migrate(folder / "index.db", str(target), _batches(on_progress, manifest))
            return manifest
        restore_sqlite(folder, manifest, Path(target).absolute())
        return manifest
    if not is_url(target):
        raise InputError(
            f"{folder} is a PostgreSQL backup; it restores into PostgreSQL only",
            "give a postgresql:// URL, or move the index with `ragloom export` / `ragloom import`",
        )
    from ragloom.operations.postgres_backup import restore_postgres  # the postgres extra

    restore_postgres(folder, manifest, str(target))
    return manifest


def _batches(on_progress: Progress | None, manifest: Manifest) -> Callable[[str, int], None] | None:
    if on_progress is None:
        return None
    total = sum(c["documents"] for c in manifest.collections.values())
    done = [0]

    def batch(_: str, documents: int) -> None:
        done[0] += documents
        on_progress("documents", done[0], total)

    return batch


@contextlib.contextmanager
def store_of(place: str | Path | Store | Any, create: bool = False) -> Iterator[Store]:
    """The store behind `place` (a path, a URL, an open `Index` or store): one given is used
    as it is; one named is opened here (read-only, unless `create`: for writing, created
    when missing) and closed after."""
    given = getattr(place, "store", place)
    if isinstance(given, Store):
        yield given
        return
    if not isinstance(given, (str, Path)):
        raise InputError(f"no index at {given!r}", "give a path, a URL, an Index or a store")
    store = open_store(given, create=create, read_only=not create)
    try:
        yield store
    finally:
        store.close()
