"""BM25 with a weight per query term (an expanded query), scoring every matching chunk.

An RM3-expanded query gives each term its own weight; `ragloom.lexical.topk`'s pruning
assumes unit weights, so this path scores exhaustively: the sum over terms of
weight * BM25(term, chunk), ties to the lower row id. Opt-in (PRF), a few milliseconds on
collections of SciFact's size.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ragloom.lexical.bm25 import BM25Params, bm25_weights
from ragloom.lexical.topk import Stats, Target


def weighted_search(
    targets: Sequence[Target],
    terms: Sequence[int],
    weights: Sequence[float],
    k: int,
    stats: Stats,
    params: BM25Params,
) -> tuple[np.ndarray, np.ndarray]:
    """Top `k` (row ids, scores) of sum(weight * BM25) over the segments, best first."""
    rows: list[np.ndarray] = []
    scores: list[np.ndarray] = []
    if k <= 0 or not terms:
        return np.zeros(0, np.int64), np.zeros(0, np.float64)
    for target in targets:
        segment = target.segment
        total = np.zeros(segment.n, np.float64)
        for term, weight in zip(terms, weights):
            docs, tfs = segment.postings(term)
            if len(docs):
                lengths = segment.lengths[docs]
                contribution = bm25_weights(
                    tfs.astype(np.float64), lengths, stats.idf[term], stats.avgdl, params
                )
                total[docs] += weight * contribution
        keep = total > 0
        if target.eligible is not None:
            keep &= target.eligible
        docs = np.flatnonzero(keep)
        rows.append(segment.rows[docs])
        scores.append(total[docs])
    if not rows:
        return np.zeros(0, np.int64), np.zeros(0, np.float64)
    all_rows, all_scores = np.concatenate(rows), np.concatenate(scores)
    order = np.lexsort((all_rows, -all_scores))[:k]
    return all_rows[order].astype(np.int64), all_scores[order]
