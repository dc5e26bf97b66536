"""BM25 scoring as pure functions (Lucene's formulation: IDF with +1 inside the log)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ragloom.errors import InvalidRequest


@dataclass(frozen=True)
class BM25Params:
    """Term saturation `k1` and length normalisation `b` (BEIR/Anserini defaults)."""

    k1: float = 0.9
    b: float = 0.4

    def __post_init__(self) -> None:
        # Bad values are a bad request (`bad_request`), as HTTP's schema refuses them.
        if not (self.k1 >= 0):
            raise InvalidRequest(f"k1 must be >= 0, got {self.k1}")
        if not (0 <= self.b <= 1):
            raise InvalidRequest(f"b must be between 0 and 1, got {self.b}")


def bm25_idf(df: int, n_docs: int) -> float:
    """Lucene's IDF, log(1 + (N - df + 0.5) / (df + 0.5)): always positive."""
    return math.log1p((n_docs - df + 0.5) / (df + 0.5))


def bm25_weights(
    tf: np.ndarray, doc_len: np.ndarray, idf: float, avgdl: float, params: BM25Params
) -> np.ndarray:
    """Per-document contribution of one term: idf * tf*(k1+1) / (tf + k1*(1-b+b*len/avgdl))."""
    k1, b = params.k1, params.b
    norm = k1 * (1.0 - b + b * (doc_len / avgdl))
    return idf * (tf * (k1 + 1.0)) / (tf + norm)


def bm25_ceiling(idfs: Sequence[float], params: BM25Params) -> float:
    """The most BM25 any chunk could score for a query whose terms (repeats kept) have these
    idfs: each term's weight tends to idf * (k1 + 1) as its frequency grows."""
    return float(sum(idfs)) * (params.k1 + 1.0)
