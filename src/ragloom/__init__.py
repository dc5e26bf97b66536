"""ragloom: find the few passages of your own material that answer the question at hand."""

from ragloom.config import CollectionConfig
from ragloom.errors import (
    DecodeError,
    InputError,
    NotFound,
    PathNotFound,
    RagloomError,
    RecordError,
    StoreError,
)
from ragloom.index import DEFAULT_COLLECTION, Index, IndexReport
from ragloom.lexical import BM25Params
from ragloom.loading import JsonlFields
from ragloom.models import Chunk, ChunkSpan, Document, Hit

__version__ = "0.1.0"


def open_index(path: str = "ragloom.db", create: bool = True) -> Index:
    """Open (or create) an index file."""
    return Index(path, create=create)


__all__ = [
    "DEFAULT_COLLECTION",
    "BM25Params",
    "Chunk",
    "ChunkSpan",
    "CollectionConfig",
    "DecodeError",
    "Document",
    "Hit",
    "Index",
    "IndexReport",
    "InputError",
    "JsonlFields",
    "NotFound",
    "PathNotFound",
    "RagloomError",
    "RecordError",
    "StoreError",
    "open_index",
]
