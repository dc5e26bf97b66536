"""Chunking: cut documents into bounded, overlapping, exactly-offset spans (pure functions)."""

from ragloom.chunking.chunker import chunk_text
from ragloom.chunking.policy import MODES, ChunkPolicy

__all__ = ["MODES", "ChunkPolicy", "chunk_text"]
