"""Persistent storage behind one seam (`ragloom.store.base`): the embedded SQLite store
(`sqlite`) and PostgreSQL with pgvector (`postgres`); the row logic both share is `rows`."""

from ragloom.store.records import StoredChunk, StoredDocument
from ragloom.store.sqlite import SQLiteStore

__all__ = ["SQLiteStore", "StoredChunk", "StoredDocument"]
