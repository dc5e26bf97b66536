"""The embedded store: one SQLite file in WAL mode plus immutable segment files beside it."""

from ragloom.store.sqlite.store import SQLiteStore

__all__ = ["SQLiteStore"]
