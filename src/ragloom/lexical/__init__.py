"""Lexical retrieval: BM25 over an incrementally updated in-memory inverted index."""

from ragloom.lexical.bm25 import BM25Params, bm25_idf, bm25_weights
from ragloom.lexical.index import LexicalIndex

__all__ = ["BM25Params", "LexicalIndex", "bm25_idf", "bm25_weights"]
