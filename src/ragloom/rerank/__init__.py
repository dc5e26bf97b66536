"""Rerankers: a local ONNX cross-encoder, HTTP rerank services, or an LLM."""

from ragloom.rerank.base import Reranker
from ragloom.rerank.resolve import resolve_reranker

__all__ = ["Reranker", "resolve_reranker"]
