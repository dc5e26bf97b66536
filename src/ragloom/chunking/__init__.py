"""Chunking: cut documents into bounded, overlapping, exactly-offset spans (pure functions).

The chunkers load when first used (a search reads a collection's `ChunkPolicy` only)."""

from typing import TYPE_CHECKING, Any

from ragloom.chunking.policy import MODES, ChunkPolicy

if TYPE_CHECKING:
    from ragloom.chunking.chunker import Chunked, chunk_text, split_document

__all__ = ["MODES", "ChunkPolicy", "Chunked", "chunk_text", "split_document"]


def __getattr__(name: str) -> Any:
    if name in ("Chunked", "chunk_text", "split_document"):
        from ragloom.chunking import chunker

        return getattr(chunker, name)
    raise AttributeError(f"module 'ragloom.chunking' has no attribute {name!r}")
