"""Chunking: cut documents into bounded, overlapping, exactly-offset spans (pure functions)."""

from ragloom.chunking.chunker import Chunked, chunk_text, split_document
from ragloom.chunking.policy import MODES, ChunkPolicy

__all__ = ["MODES", "ChunkPolicy", "Chunked", "chunk_text", "split_document"]
