"""Embedders: text -> unit-length float32 vectors, batched; local ONNX model or HTTP services."""

from ragloom.embedding.base import Embedder, normalize_rows
from ragloom.embedding.resolve import embedder_from_config, resolve_embedder

__all__ = ["Embedder", "embedder_from_config", "normalize_rows", "resolve_embedder"]
