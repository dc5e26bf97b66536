"""The lexical leg over one version of a collection (`ragloom.segments.view`): BM25 with
this version's statistics (N, average length and document frequencies of its live chunks,
so scores equal a fresh build's), over the live chunks that pass the filter."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ragloom.filters import FilterNode
from ragloom.lexical import topk
from ragloom.lexical.bm25 import BM25Params, bm25_idf
from ragloom.lexical.weighted import weighted_search
from ragloom.segments.view import CollectionView

_NO_ROWS = np.zeros(0, np.int64)


def search_view(
    view: CollectionView,
    terms: Sequence[int],
    k: int,
    params: BM25Params,
    where: FilterNode | None = None,
    where_key: str | None = None,
    weights: Sequence[float] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """BM25 top k (rows, scores) over live chunks passing the filter, exactly; with a weight
    per query term (PRF-expanded queries: each term once), scored exhaustively."""
    if k <= 0 or not terms or not view.n_live:
        return _NO_ROWS, np.zeros(0, np.float64)
    targets, stats = _scoring(view, terms, where, where_key)
    if weights is not None:
        return weighted_search(targets, terms, weights, k, stats, params)
    return topk.search(targets, terms, k, stats, params)


def _scoring(
    view: CollectionView, terms: Sequence[int], where: FilterNode | None, where_key: str | None
) -> tuple[list[topk.Target], topk.Stats]:
    """The segments to score (live, filtered) and this version's BM25 statistics."""
    stats = topk.Stats({t: bm25_idf(view.df(t), view.n_live) for t in set(terms)}, view.avgdl)
    filtered = where is not None
    targets = []
    for part in view.parts:
        eligible = part.eligible(where, where_key)
        allowed = None if eligible is None else part.allowed(eligible)
        few = allowed is not None and allowed < part.segment.n // 4  # (`_selective` may list)
        listed = part.listed(eligible) if eligible is not None and few else None
        targets.append(topk.Target(part.segment, eligible, filtered, allowed, listed))
    return targets, stats
