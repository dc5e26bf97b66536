"""ragloom: find the few passages of your own material that answer the question at hand."""

from typing import TYPE_CHECKING

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

if TYPE_CHECKING:
    from ragloom.client import Client

__version__ = "0.1.0"


def open_index(path: str = "ragloom.db", create: bool = True) -> Index:
    """Open (or create) an index file."""
    return Index(path, create=create)


def __getattr__(name: str) -> object:
    """Import `Client` (and httpx) only when used, keeping `import ragloom` light."""
    if name == "Client":
        from ragloom.client import Client

        return Client
    raise AttributeError(f"module 'ragloom' has no attribute {name!r}")


__all__ = [
    "DEFAULT_COLLECTION",
    "BM25Params",
    "Chunk",
    "ChunkSpan",
    "Client",
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
