"""psycopg failures as ragloom's typed errors: a server that cannot be reached or went away
is `store_unavailable`, a full disk `storage_full`, a write on a read-only server
`read_only`; nothing is half-written, since every write is one transaction."""

from __future__ import annotations

import psycopg
from psycopg import errors as pg

from ragloom.errors import ReadOnlyStore, StorageError, StorageFull, StoreError

RETRY_HINT = "check that the PostgreSQL server is running and reachable, then retry"


def from_psycopg(exc: psycopg.Error, where: str) -> StoreError:
    """The typed error for a failed call on the database at `where`."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if isinstance(exc, pg.DiskFull | pg.OutOfMemory):
        return StorageFull(
            f"the database server at {where} is out of space ({text})",
            "free space on the database server and retry: nothing was written",
        )
    if isinstance(exc, pg.ReadOnlySqlTransaction):
        return ReadOnlyStore(
            f"{where}: the server is read-only, no primary accepted the write ({text})",
            "searches still work; writes resume when the primary is back",
        )
    if isinstance(exc, pg.InsufficientPrivilege):
        return StorageError(f"{where}: permission denied ({text})", "grant the user access")
    if isinstance(exc, pg.IoError | pg.DataCorrupted | pg.IndexCorrupted):
        return StorageError(f"the database server at {where} failed ({text})")
    if isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
        whole = str(exc).lower()
        if "read-write" in whole or "read only" in whole or "read-only" in whole:
            return ReadOnlyStore(
                f"{where}: no primary is reachable, writes are not possible ({text})",
                "searches still work; writes resume when the primary is back",
            )
        return StoreError(f"cannot reach the database at {where} ({text})", RETRY_HINT)
    return StoreError(f"{where}: {text}")
