"""Opening an index file: create it atomically, refuse what is not ours, never lock to read.

A new index is built complete under a temporary name and linked into place, so two processes
creating the same index at once both end up opening one good file. Opening an existing file
only reads (no write lock), so a search starts even while a long write holds the lock, and a
read-only file or folder opens for search (with SQLite's `immutable` mode when the WAL's
shared-memory file cannot be created). A newer schema is refused before anything is written.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import uuid
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from ragloom.errors import StorageError, StoreError
from ragloom.store.sqlite.errors import CHECK_HINT, SQLITE_NOTADB, from_sqlite
from ragloom.store.sqlite.schema import APPLICATION_ID, SCHEMA, SCHEMA_VERSION

BUSY_MS = 30_000
# Readers map the file (SQLite caps this at its compile-time limit, 2 GB by default): a
# hit's pages are then read in place from the page cache, not copied in by a system call
# each. The mapped pages are the file's, shared with the page cache: no anonymous memory.
MMAP_BYTES = 1 << 31


@dataclass(frozen=True)
class FileState:
    """What opening found: the schema version and whether this process may write."""

    version: int
    writable: bool
    immutable: bool


def connect(path: Path, read_only: bool, immutable: bool = False) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit), usable across threads."""
    mode = "ro" if read_only else "rw"
    uri = f"file:{quote(str(path.resolve()))}?mode={mode}"
    if immutable:
        uri += "&immutable=1"
    try:
        conn = sqlite3.connect(
            uri, uri=True, check_same_thread=False, isolation_level=None, timeout=BUSY_MS / 1000
        )
        conn.execute(f"PRAGMA busy_timeout={BUSY_MS}")
        if read_only:
            conn.execute("PRAGMA query_only=ON")
            conn.execute(f"PRAGMA mmap_size={MMAP_BYTES}")
        else:
            conn.execute("PRAGMA foreign_keys=ON")
            conn.execute("PRAGMA synchronous=NORMAL")
    except sqlite3.Error as exc:
        raise from_sqlite(exc, str(path)) from None
    return conn


def _create(path: Path) -> None:
    """Build a new empty index under a temporary name, then link it into place.

    If another process linked its own first, ours is discarded and theirs is used.
    """
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.creating")
    try:
        conn = sqlite3.connect(tmp, isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.executescript(
                f"BEGIN; {SCHEMA}; PRAGMA application_id={APPLICATION_ID};"
                f" INSERT INTO meta VALUES ('schema_version', '{SCHEMA_VERSION}');"
                " INSERT INTO meta VALUES ('generation', '0'); COMMIT;"
            )
        finally:
            conn.close()
        with contextlib.suppress(FileExistsError):  # another process created it first
            os.link(tmp, path)
    except sqlite3.Error as exc:
        raise from_sqlite(exc, str(path)) from None
    except OSError as exc:
        raise StorageError(f"cannot create index {path} ({exc.strerror or exc})") from None
    finally:
        for leftover in (tmp, tmp.with_name(tmp.name + "-wal"), tmp.with_name(tmp.name + "-shm")):
            with contextlib.suppress(OSError):
                leftover.unlink()


def _writable(path: Path) -> bool:
    return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)


def _inspect(conn: sqlite3.Connection, path: Path) -> int:
    """The schema version of a file, after checking that it is a ragloom index."""
    try:
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
    except sqlite3.DatabaseError as exc:
        code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
        if code == SQLITE_NOTADB:
            raise StoreError(
                f"{path} is not a ragloom index (not a SQLite file)",
                "point --index at a ragloom index file or a new path",
            ) from None
        raise from_sqlite(exc, str(path)) from None
    if app_id != APPLICATION_ID:
        if tables == 0:
            raise StoreError(
                f"{path} is a SQLite database with no tables, not a ragloom index",
                "point --index at a ragloom index file or a new path",
            )
        raise StoreError(
            f"{path} is a SQLite file that ragloom did not create; refusing to touch it",
            "point --index at a ragloom index file or a new path",
        )
    try:
        row = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{path} is a damaged ragloom index ({exc})", CHECK_HINT) from None
    if row is None:
        raise StoreError(f"{path} is a damaged ragloom index (no schema version)", CHECK_HINT)
    try:
        return int(row[0])
    except (TypeError, ValueError):
        raise StoreError(
            f"{path} is a damaged ragloom index (schema version {row[0]!r} is not a number)",
            CHECK_HINT,
        ) from None


def open_file(path: Path, create: bool, read_only: bool) -> FileState:
    """Check (and if asked, create) the index file; never takes the write lock to read."""
    if path.is_dir():
        raise StoreError(f"{path} is a folder, not an index file", "pass a file path")
    if not path.exists():
        if not create or read_only:
            raise StoreError(f"no index at {path}", "create one with `ragloom index PATH...`")
        if not path.parent.is_dir():
            raise StoreError(
                f"cannot create index {path}: folder {path.parent} does not exist",
                "create the folder or choose another --index path",
            )
        if not os.access(path.parent, os.W_OK | os.X_OK):
            raise StorageError(
                f"cannot create index {path}: folder {path.parent} is read-only for this user",
                "choose a folder you can write, or change the folder's permissions",
            )
        _create(path)
    if path.stat().st_size == 0:
        raise StoreError(
            f"{path} is an empty file, not a ragloom index",
            "point --index at a ragloom index file or a new path",
        )
    writable = not read_only and _writable(path)
    immutable = False
    conn = connect(path, read_only=True)
    try:
        version = _inspect(conn, path)
    except StoreError:
        if writable:
            raise
        conn.close()
        conn = connect(path, read_only=True, immutable=True)  # read-only folder, no -shm
        immutable = True
        version = _inspect(conn, path)
    finally:
        conn.close()
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"{path} was written by a newer ragloom (schema {version}, this one reads "
            f"{SCHEMA_VERSION} and older)",
            "upgrade ragloom to use this index; it was not modified",
        )
    if version < 1:
        raise StoreError(f"{path} is a damaged ragloom index (schema {version})", CHECK_HINT)
    return FileState(version, writable, immutable)
