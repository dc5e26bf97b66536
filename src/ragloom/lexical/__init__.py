"""Lexical retrieval: BM25 (`bm25`) and exact pruned top-k over segments (`topk`)."""

from ragloom.lexical.bm25 import BM25Params, bm25_idf, bm25_weights

__all__ = ["BM25Params", "bm25_idf", "bm25_weights"]
