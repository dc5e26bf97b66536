"""Persistent storage behind one seam (`ragloom.store.base`): the embedded SQLite store."""

from ragloom.store.records import StoredChunk, StoredDocument
from ragloom.store.sqlite import SQLiteStore

__all__ = ["SQLiteStore", "StoredChunk", "StoredDocument"]
