"""ragloom: find the few passages of your own material that answer the question at hand."""

from typing import TYPE_CHECKING

from ragloom.config import CollectionConfig
from ragloom.errors import (
    ArchiveTooLarge,
    ConvertTimeout,
    DecodeError,
    DocumentError,
    EmbeddingError,
    EmbeddingMismatch,
    EmbeddingOffline,
    EmbedFailed,
    FileChanged,
    FileError,
    FileRefused,
    FileTooLarge,
    FilterTypeMismatch,
    IdConflict,
    IndexTimeout,
    InputError,
    LLMError,
    LLMFailed,
    LLMOffline,
    MissingExtra,
    ModelUnavailable,
    NeedsVectors,
    NoTextLayer,
    NotFound,
    PasswordProtected,
    PathNotFound,
    RagloomError,
    ReadInterrupted,
    ReadOnlyStore,
    ReadTimeout,
    RecordError,
    RerankError,
    RerankFailed,
    RerankOffline,
    ShardUnavailable,
    StorageError,
    StorageFull,
    StoreError,
    UnsupportedFormat,
    WriterBusy,
)
from ragloom.index import DEFAULT_COLLECTION, Index, IndexReport
from ragloom.lexical import BM25Params
from ragloom.server.errors import (
    Forbidden,
    InvalidRequest,
    MalformedJSON,
    MisdirectedHost,
    PayloadTooLarge,
    ServerError,
    Unauthorized,
)
from ragloom.types import Chunk, ChunkSpan, Document, Hit, Structure
from ragloom.version import __version__ as __version__

if TYPE_CHECKING:
    from ragloom.answer import AskResult
    from ragloom.client import Client, ConnectionFailed
    from ragloom.loading import JsonlFields
    from ragloom.watch import Watcher

# Names imported when first used, so that `import ragloom` (a one-shot search) stays light:
# the HTTP client and httpx, the file readers, the watcher, the answer stage.
_LAZY = {
    "AskResult": "ragloom.answer",
    "Client": "ragloom.client",
    "ConnectionFailed": "ragloom.client",
    "JsonlFields": "ragloom.loading",
    "Watcher": "ragloom.watch",
}


def open_index(path: str = "ragloom.db", create: bool = True) -> Index:
    """Open (or create) an index file."""
    return Index(path, create=create)


def __getattr__(name: str) -> object:
    """The names of `_LAZY`, imported on first use."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'ragloom' has no attribute {name!r}")


__all__ = [
    "AskResult",
    "BM25Params",
    "Chunk",
    "ChunkSpan",
    "Client",
    "CollectionConfig",
    "ConnectionFailed",
    "DEFAULT_COLLECTION",
    "DecodeError",
    "Document",
    "EmbedFailed",
    "EmbeddingError",
    "EmbeddingMismatch",
    "EmbeddingOffline",
    "FileChanged",
    "FileError",
    "FileRefused",
    "ArchiveTooLarge",
    "ConvertTimeout",
    "DocumentError",
    "FileTooLarge",
    "NoTextLayer",
    "PasswordProtected",
    "UnsupportedFormat",
    "FilterTypeMismatch",
    "Forbidden",
    "Hit",
    "IdConflict",
    "Index",
    "IndexReport",
    "IndexTimeout",
    "InputError",
    "InvalidRequest",
    "LLMError",
    "LLMFailed",
    "LLMOffline",
    "JsonlFields",
    "MalformedJSON",
    "MisdirectedHost",
    "MissingExtra",
    "ModelUnavailable",
    "NeedsVectors",
    "NotFound",
    "PathNotFound",
    "PayloadTooLarge",
    "RagloomError",
    "ReadInterrupted",
    "ReadOnlyStore",
    "ShardUnavailable",
    "Watcher",
    "WriterBusy",
    "ReadTimeout",
    "RecordError",
    "RerankError",
    "RerankFailed",
    "RerankOffline",
    "ServerError",
    "StorageError",
    "StorageFull",
    "Structure",
    "StoreError",
    "Unauthorized",
    "open_index",
]
