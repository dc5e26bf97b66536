"""Backup and restore of the embedded store: an online copy of one committed version.

Backup, inside one read transaction (writers go on; searches never wait): the live segment
files of that version are opened (an open file survives a merge deleting it), the database
is copied with SQLite's backup API (which reads through the transaction, so the copy is
exactly that version), then the opened segment files are copied. Restore copies the files
back under hidden names and renames them into place; the database file comes last.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from ragloom.errors import InputError
from ragloom.operations.manifest import Manifest, copy_hashing, file_digest
from ragloom.operations.staging import remove_path, remove_stale, staging_name, sync_tree
from ragloom.segments.files import fsync_folder
from ragloom.store.sqlite.store import SQLiteStore

DATABASE = "index.db"
SEGMENTS = "index.db-segments"
Progress = Callable[[str, int, int], None]  # (what, done, total)


def backup_sqlite(
    store: SQLiteStore, folder: Path, on_progress: Progress | None = None
) -> Manifest:
    """Copy the index `store` serves into `folder` (empty); returns the manifest written."""
    handles: dict[str, BinaryIO] = {}
    try:
        with store.snapshot() as snap:
            conn: sqlite3.Connection = snap.conn
            live = [n for (n,) in conn.execute("SELECT name FROM segments WHERE retired IS NULL")]
            for name in live:
                for suffix in (".seg", ".hnsw"):
                    path = store.files.folder / f"{name}{suffix}"
                    with contextlib.suppress(FileNotFoundError):  # a graph may not exist yet
                        handles[path.name] = open(path, "rb")  # noqa: SIM115 (closed below)
            target = sqlite3.connect(folder / DATABASE)
            try:
                conn.backup(target)
            finally:
                target.close()
            manifest = Manifest("sqlite", snap.generation, store.location)
            manifest.collections = _counts(conn)
        (folder / SEGMENTS).mkdir()
        for done, (name, handle) in enumerate(sorted(handles.items()), start=1):
            manifest.files[f"{SEGMENTS}/{name}"] = copy_hashing(handle, folder / SEGMENTS / name)
            if on_progress:
                on_progress("segment files", done, len(handles))
    finally:
        for handle in handles.values():
            handle.close()
    size, digest = file_digest(folder / DATABASE)
    manifest.files[DATABASE] = {"bytes": size, "sha256": digest}
    manifest.write(folder)
    return manifest


def _counts(conn: sqlite3.Connection) -> dict[str, dict[str, int]]:
    rows = conn.execute(
        "SELECT c.name, (SELECT count(*) FROM documents d WHERE d.collection_id = c.id),"
        " (SELECT count(*) FROM chunks k WHERE k.collection_id = c.id) FROM collections c"
    ).fetchall()
    return {name: {"documents": docs, "chunks": chunks} for name, docs, chunks in rows}


def restore_sqlite(backup: Path, manifest: Manifest, target: Path) -> None:
    """Write the backup as the index file `target` (which must not exist) and its segments."""
    place_index(backup / DATABASE, backup / SEGMENTS, target, move=False)


def place_index(database: Path, segments: Path, target: Path, move: bool) -> None:
    """Put an index file and its segment folder at `target` (which must not exist): both go
    under hidden names first, then the segment folder is renamed into place, then the file is
    linked (never replacing one that appeared meanwhile). `move` renames instead of copying
    (same file system)."""
    target_segments = target.with_name(target.name + "-segments")
    for path in (target, target.with_name(target.name + "-wal")):
        if path.exists():
            raise InputError(
                f"{path} already exists; nothing is ever written over an index",
                "choose a new path (or move the old index aside first)",
            )
    _clear_leftover(target_segments)
    remove_stale(target)
    remove_stale(target_segments)
    staged_db = staging_name(target)
    staged_segments = staging_name(target_segments)
    try:
        if move:
            os.rename(segments, staged_segments) if segments.exists() else staged_segments.mkdir()
            os.rename(database, staged_db)
        else:
            shutil.copytree(segments, staged_segments)
            shutil.copyfile(database, staged_db)
        (staged_segments / ".restoring").touch()  # a crash before the file lands: leftover
        sync_tree(staged_segments)
        with open(staged_db, "rb+") as handle:
            os.fsync(handle.fileno())
        os.rename(staged_segments, target_segments)
        os.link(staged_db, target)
        (target_segments / ".restoring").unlink()
        fsync_folder(target.parent)
    except FileExistsError:
        raise InputError(f"{target} appeared meanwhile; it was left alone") from None
    finally:
        remove_path(staged_db)
        remove_path(staged_segments)


def _clear_leftover(segments: Path) -> None:
    """A segment folder without its index: a restore that died before its last step left it
    (it still holds the marker); anything else there is not ours to remove."""
    if not segments.exists():
        return
    if (segments / ".restoring").exists():
        shutil.rmtree(segments)
        return
    raise InputError(
        f"{segments} already exists (segment files of another index)",
        "restore to a new path (or move the old index aside first)",
    )
