"""The lexical leg over one version of a collection (`ragloom.segments.view`): BM25 with
this version's statistics (N, average length and document frequencies of its live chunks,
so scores equal a fresh build's), over the live chunks that pass the filter; and the most
common terms' weights built ahead under those statistics (`warm_view`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ragloom.filters import FilterNode
from ragloom.lexical import topk
from ragloom.lexical.bm25 import BM25Params, bm25_idf
from ragloom.lexical.term_weights import CACHE_LIMIT, term_facts
from ragloom.lexical.weighted import weighted_search
from ragloom.segments.segment import Segment
from ragloom.segments.view import CollectionView

_NO_ROWS = np.zeros(0, np.int64)
WARM_BYTES = 128 << 20  # the most common terms' weights built ahead, a collection
WARM_TERMS = CACHE_LIMIT // 4  # at most this many a segment: the cache keeps room for queries


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
    stats = view_stats(view, terms)
    filtered = where is not None
    targets = []
    for part in view.parts:
        eligible = part.eligible(where, where_key)
        allowed = None if eligible is None else part.allowed(eligible)
        few = allowed is not None and allowed < part.segment.n // 4  # (`_selective` may list)
        listed = part.listed(eligible) if eligible is not None and few else None
        targets.append(topk.Target(part.segment, eligible, filtered, allowed, listed))
    return targets, stats


def view_stats(view: CollectionView, terms: Sequence[int]) -> topk.Stats:
    """This version's BM25 statistics of the terms: what their cached weights are keyed by."""
    return topk.Stats({t: bm25_idf(view.df(t), view.n_live) for t in set(terms)}, view.avgdl)


def warm_view(view: CollectionView, params: BM25Params, budget: int = WARM_BYTES) -> int:
    """Build the weights of the collection's most common terms under this version's
    statistics, the longest postings first over all its segments, while they fit in
    `budget` bytes: the terms most queries meet, whose first use right after open costs most
    (their weights are new memory: on a virtual machine, a page fault of microseconds every
    512 weights). Searches then find them cached. Returns the bytes built."""
    picks: list[tuple[int, Segment, int]] = []
    for part in view.parts if view.n_live else ():  # (no live chunk: no search scores any)
        segment = part.segment
        df = np.diff(segment.ptr)
        top = (
            np.argpartition(-df, WARM_TERMS)[:WARM_TERMS]
            if len(df) > WARM_TERMS
            else range(len(df))
        )
        picks += [(int(df[i]), segment, int(segment.terms[i])) for i in top]
    built = 0
    for count, segment, term in sorted(picks, key=lambda pick: -pick[0]):
        if built + 8 * count > budget:
            break
        term_facts(segment, view_stats(view, [term]), params, term)
        built += 8 * count
    return built
