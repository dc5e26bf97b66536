"""SQLite and file-system failures as ragloom's typed storage errors.

A full disk is `StorageFull`, other operating-system failures (I/O errors, a read-only file
system, permissions) are `StorageError` with the OS cause, a damaged file is `StoreError`.
No message advises deleting an index unless the file is provably not a ragloom index.
"""

from __future__ import annotations

import errno
import sqlite3

from ragloom.errors import StorageError, StorageFull, StoreError

FREE_HINT = "free some disk space and retry: nothing was written, the index is as it was"
CHECK_HINT = (
    "run `ragloom check` to see what is damaged, then `ragloom check --repair` to write a new "
    "index from everything readable; do not delete the index yet"
)


# SQLite's primary result codes (its C API's, stable; Python names them only from 3.11).
SQLITE_BUSY, SQLITE_LOCKED, SQLITE_READONLY, SQLITE_IOERR = 5, 6, 8, 10
SQLITE_CORRUPT, SQLITE_FULL, SQLITE_CANTOPEN, SQLITE_NOTADB = 11, 13, 14, 26


def from_sqlite(exc: sqlite3.Error, where: str) -> StoreError:
    """The typed error for a failed SQLite call on `where` (an index path)."""
    code = getattr(exc, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else None
    text = str(exc)
    lowered = text.lower()
    if primary == SQLITE_FULL or "disk is full" in lowered:
        return StorageFull(f"the disk holding {where} is full ({text})", FREE_HINT)
    if primary == SQLITE_READONLY or "readonly" in lowered or "read-only" in lowered:
        return StorageError(
            f"{where} cannot be written: it is read-only ({text})",
            "open it for search only, or fix the file's and folder's permissions",
        )
    if primary in (SQLITE_IOERR, SQLITE_CANTOPEN) or "i/o error" in lowered:
        return StorageError(f"the operating system failed to read or write {where} ({text})")
    if primary in (SQLITE_CORRUPT, SQLITE_NOTADB) or "malformed" in lowered:
        return StoreError(f"{where} is damaged ({text})", CHECK_HINT)
    if lowered.startswith(("no such table:", "no such column:")):  # dropped by someone else
        kind = "table" if lowered.startswith("no such table") else "column"
        missing = text.split(":", 1)[1].strip()
        return StoreError(
            f"{where} is a damaged ragloom index: its {kind} {missing!r} is missing", CHECK_HINT
        )
    if primary in (SQLITE_BUSY, SQLITE_LOCKED) or "locked" in lowered:
        return StoreError(
            f"{where} is busy: another writer held it too long ({text})",
            "retry; a long indexing job in another process holds the write lock",
        )
    return StoreError(f"{where}: {text}")


def from_os(exc: OSError, what: str) -> StoreError:
    """The typed error for a failed file operation on `what`."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return StorageFull(f"the disk is full while writing {what} ({exc.strerror})", FREE_HINT)
    if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return StorageError(f"{what} cannot be written ({exc.strerror})")
    return StorageError(f"the operating system failed on {what} ({exc.strerror or exc})")
