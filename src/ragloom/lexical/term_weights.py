"""A term's BM25 weights in one segment and what the top k derives from them (block maxima,
smallest weight, its postings' span), built together in one pass, and a very common term's
weights by chunk number, built when a search first reads them; all remembered in the
segment's cache under the version's statistics: a read-mostly index answers many queries
with the same N and lengths. Pure numeric code; the statistics come from the caller.
"""

from __future__ import annotations

from contextlib import suppress
from dataclasses import dataclass
from typing import Any

import numpy as np

from ragloom.lexical import cursors, kernels
from ragloom.lexical.bm25 import BM25Params, bm25_weights
from ragloom.segments.segment import Segment

CACHE_LIMIT = 1024  # terms' facts (and first sightings) remembered per segment
DENSE_SHARE = 0.5  # a term in more than this share of a segment's chunks: weights by chunk too


@dataclass(frozen=True)
class Stats:
    """Collection-wide BM25 statistics of one version: idf per query term, average length."""

    idf: dict[int, float]
    avgdl: float


def _key(tag: str, term: int, stats: Stats, params: BM25Params) -> tuple:
    """The cache key of what `tag` names for a term under one version's statistics: every
    entry derived from a term's weights is keyed alike, so none outlives the weights'."""
    return (tag, term, params.k1, params.b, stats.idf[term], stats.avgdl)


def term_weights(
    segment: Segment, stats: Stats, params: BM25Params, term: int
) -> tuple[np.ndarray, np.ndarray]:
    """(docs, BM25 weights) of one term in one segment: its `TermFacts`' (built once for the
    same statistics, which a read-mostly index keeps for many queries)."""
    facts = term_facts(segment, stats, params, term)
    return facts.docs, facts.weights


def _recall(segment: Segment, key: Any) -> Any:
    """The segment's cached value for `key` (None if absent), moved to the recent end: the
    cache's order is its entries' last use. (Each step is one atomic call: an entry another
    thread reads meanwhile is never seen missing.)"""
    cache = segment.cache
    value = cache.get(key)
    if value is not None:
        with suppress(KeyError):  # (dropped by another thread in between)
            cache.move_to_end(key)
    return value


def _remember(segment: Segment, key: Any, value: Any) -> None:
    """Keep `value` in the segment's cache; a full one (`CACHE_LIMIT` entries) first drops its
    least recently used half, so the weights every query reads (a common term's, those
    `warm()` built) outlive a stream of terms met once, and stale statistics' entries go."""
    cache = segment.cache
    if len(cache) >= CACHE_LIMIT:
        with suppress(KeyError):  # (emptied by another thread meanwhile)
            for _ in range(len(cache) // 2):
                cache.popitem(last=False)  # the least recently used
    cache[key] = value


def length_norms(segment: Segment, stats: Stats, params: BM25Params) -> np.ndarray:
    """k1*(1-b+b*len/avgdl) of every chunk of the segment, as `bm25_weights` computes it (so
    a weight read from it has the same bits): every term's weights then read one value a
    posting instead of recomputing it. One array a segment is kept, for the latest average
    length and parameters (each write changes the average: none piles up)."""
    wanted = (params.k1, params.b, stats.avgdl)
    held = _recall(segment, "norm")
    if held is None or held[0] != wanted:
        k1, b = params.k1, params.b
        held = (wanted, k1 * (1.0 - b + b * (segment.lengths / stats.avgdl)))
        _remember(segment, "norm", held)
    return held[1]


@dataclass(frozen=True)
class TermFacts:
    """What the top k reads of one term in one segment: its postings' span in the segment's
    arrays, its chunks and BM25 weights, their exact maxima over blocks of
    `cursors.BLOCK_SIZE` (1/128 of their size), the smallest weight (0.0 for none), and
    whether the term is in more than `DENSE_SHARE` of the chunks (`common`: MaxScore reads
    its weights by chunk number, `weights_by_chunk`, in one look-up a chunk)."""

    span: tuple[int, int]
    docs: np.ndarray
    weights: np.ndarray
    maxima: np.ndarray
    least: float
    common: bool


def term_facts(segment: Segment, stats: Stats, params: BM25Params, term: int) -> TermFacts:
    """One term's `TermFacts`, remembered in the segment's cache under the version's
    statistics: one look-up a term and segment per query. Built in one compiled pass over
    the postings when the kernels are loaded, else by numpy (the same bits)."""
    key = _key("facts", term, stats, params)
    facts = _recall(segment, key)
    if facts is None:
        i = segment.term_index(int(term))
        lo, hi = (int(segment.ptr[i]), int(segment.ptr[i + 1])) if i >= 0 else (0, 0)
        docs, tfs = segment.docs[lo:hi], segment.tfs[lo:hi]
        if kernels.ready():
            norm = length_norms(segment, stats, params)
            weighed = kernels.weigh(docs, tfs, norm, stats.idf[term], params.k1)
        else:
            weighed = _weigh_by_numpy(segment, docs, tfs, stats.idf[term], stats.avgdl, params)
        facts = TermFacts((lo, hi), docs, *weighed, hi - lo > DENSE_SHARE * segment.n)
        _remember(segment, key, facts)
    return facts


def weights_by_chunk(segment: Segment, stats: Stats, params: BM25Params, term: int) -> np.ndarray:
    """A term's weights by chunk number (0.0 where a chunk lacks it), built from its
    `TermFacts` the first time a search reads them and remembered beside them: only MaxScore
    and scoring listed chunks read them, so a query the windows answer never writes the
    segment's n floats (most of a very common term's first use after open at 1M)."""
    key = _key("by_chunk", term, stats, params)
    weights = _recall(segment, key)
    if weights is None:
        facts = term_facts(segment, stats, params, term)
        weights = kernels.by_chunk(facts.docs, facts.weights, segment.n)
        _remember(segment, key, weights)
    return weights


def _weigh_by_numpy(
    segment: Segment,
    docs: np.ndarray,
    tfs: np.ndarray,
    idf: float,
    avgdl: float,
    params: BM25Params,
) -> tuple[np.ndarray, np.ndarray, float]:
    """`kernels.weigh`'s answer by numpy (the compiled kernels are not loaded: a small index)."""
    weights = bm25_weights(tfs.astype(np.float64), segment.lengths[docs], idf, avgdl, params)
    if not len(weights):
        return weights, weights, 0.0
    maxima = np.maximum.reduceat(weights, np.arange(0, len(weights), cursors.BLOCK_SIZE))
    return weights, maxima, float(weights.min())


def known_facts(segment: Segment, stats: Stats, params: BM25Params, term: int) -> TermFacts | None:
    """A term's `TermFacts` if they are cached or the term was met before under these
    statistics (they are built then), else None, the term marked as met: a caller that needs
    the weights at a few chunks reads those from the postings on a term's first use instead
    of building all of them (a selective filter right after open), and the second use pays
    once for the whole weights every later query reads."""
    key = _key("facts", term, stats, params)
    facts = _recall(segment, key)
    if facts is not None:
        return facts
    seen = ("seen", *key[1:])
    if seen in segment.cache:
        return term_facts(segment, stats, params, term)
    _remember(segment, seen, True)
    return None
