"""Lexical retrieval: BM25 (`bm25`), exact pruned top-k over segments (`topk`), weighted
query terms (`weighted`), and the leg over one version of a collection (`views`)."""

from ragloom.lexical.bm25 import BM25Params, bm25_ceiling, bm25_idf, bm25_weights

__all__ = ["BM25Params", "bm25_ceiling", "bm25_idf", "bm25_weights"]
