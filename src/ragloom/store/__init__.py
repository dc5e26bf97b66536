"""Persistent storage of collections, documents, chunks and lexical postings."""

from ragloom.store.sqlite import SQLiteStore, StoredChunk, StoredDocument

__all__ = ["SQLiteStore", "StoredChunk", "StoredDocument"]
