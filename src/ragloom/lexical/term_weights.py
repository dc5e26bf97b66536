"""A term's BM25 weights in one segment and what the top k derives from them (block maxima,
smallest weight, weights by chunk number, its postings' span), each remembered in the
segment's cache under the version's statistics: a read-mostly index answers many queries
with the same N and lengths. Pure numeric code; the statistics come from the caller.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ragloom.lexical import cursors, kernels
from ragloom.lexical.bm25 import BM25Params, bm25_weights
from ragloom.segments.segment import Segment

CACHE_LIMIT = 4096  # term weights remembered per segment (for repeated statistics)
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
    """(docs, BM25 weights) of one term in one segment, remembered per segment for the same
    statistics (a read-mostly index answers many queries with the same N and lengths)."""
    key = _key("w", term, stats, params)
    cached = segment.cache.get(key)
    if cached is not None:
        return cached
    docs, tfs = segment.postings(term)
    if not len(docs):
        weights = np.zeros(0, np.float64)
    else:
        if kernels.ready():  # one compiled pass; else numpy's: the same arithmetic and bits
            norm = length_norms(segment, stats, params)
            weights = kernels.weigh(docs, tfs, norm, stats.idf[term], params.k1)
        else:
            lengths = segment.lengths[docs]
            weights = bm25_weights(
                tfs.astype(np.float64), lengths, stats.idf[term], stats.avgdl, params
            )
    _remember(segment, key, (docs, weights))
    return docs, weights


def _remember(segment: Segment, key: tuple, value: Any) -> None:
    """Keep `value` in the segment's cache, emptied first once it holds `CACHE_LIMIT`."""
    if len(segment.cache) >= CACHE_LIMIT:
        segment.cache.clear()
    segment.cache[key] = value


def length_norms(segment: Segment, stats: Stats, params: BM25Params) -> np.ndarray:
    """k1*(1-b+b*len/avgdl) of every chunk of the segment, as `bm25_weights` computes it (so
    a weight read from it has the same bits): every term's weights then read one value a
    posting instead of recomputing it. One array a segment is kept, for the latest average
    length and parameters (each write changes the average: none piles up)."""
    wanted = (params.k1, params.b, stats.avgdl)
    held = segment.cache.get("norm")
    if held is None or held[0] != wanted:
        k1, b = params.k1, params.b
        held = segment.cache["norm"] = (
            wanted,
            k1 * (1.0 - b + b * (segment.lengths / stats.avgdl)),
        )
    return held[1]


def _beside(
    segment: Segment,
    stats: Stats,
    params: BM25Params,
    term: int,
    tag: str,
    derive: Callable[[np.ndarray, np.ndarray], Any],
) -> Any:
    """`derive(docs, weights)` of a term's cached weights, remembered beside them under the
    same statistics (`tag` names what is derived)."""
    key = _key(tag, term, stats, params)
    cached = segment.cache.get(key)
    if cached is None:
        cached = segment.cache[key] = derive(*term_weights(segment, stats, params, term))
    return cached


def block_maxima(segment: Segment, stats: Stats, params: BM25Params, term: int) -> np.ndarray:
    """The exact maxima of a term's cached weights over its blocks of postings (remembered
    beside the weights: 1/128 of their size)."""
    return _beside(segment, stats, params, term, "bm", _maxima_of)


def _maxima_of(_docs: np.ndarray, weights: np.ndarray) -> np.ndarray:
    starts = np.arange(0, len(weights), cursors.BLOCK_SIZE)
    return np.maximum.reduceat(weights, starts) if len(weights) else weights


def least_weight(segment: Segment, stats: Stats, params: BM25Params, term: int) -> float:
    """The smallest of a term's cached weights (0.0 for none), remembered beside them."""
    return _beside(
        segment, stats, params, term, "min", lambda _, w: float(w.min()) if len(w) else 0.0
    )


def by_chunk_weights(
    segment: Segment, stats: Stats, params: BM25Params, term: int
) -> np.ndarray | None:
    """A very common term's weights by chunk number (`kernels.by_chunk`), remembered beside
    its weights (at most twice their memory), or None for a term in fewer chunks."""
    if segment.df(term) <= DENSE_SHARE * segment.n:
        return None
    n = segment.n
    return _beside(segment, stats, params, term, "d", lambda d, w: kernels.by_chunk(d, w, n))


@dataclass(frozen=True)
class TermFacts:
    """What the compiled kernels read of one term in one segment: its postings' span in the
    segment's arrays, its cached weights and what derives from them."""

    span: tuple[int, int]
    docs: np.ndarray
    weights: np.ndarray
    maxima: np.ndarray
    least: float
    dense: np.ndarray | None


def term_facts(segment: Segment, stats: Stats, params: BM25Params, term: int) -> TermFacts:
    """One term's `TermFacts`, remembered beside its weights under the same statistics: one
    look-up a term and segment per query instead of one per fact (five dict look-ups and two
    bisections of the vocabulary: ~6 % of a 1M common query with its caches cold)."""
    key = _key("facts", term, stats, params)
    facts = segment.cache.get(key)
    if facts is None:
        i = segment.term_index(int(term))
        span = (int(segment.ptr[i]), int(segment.ptr[i + 1])) if i >= 0 else (0, 0)
        docs, weights = term_weights(segment, stats, params, term)
        facts = TermFacts(
            span,
            docs,
            weights,
            block_maxima(segment, stats, params, term),
            least_weight(segment, stats, params, term),
            by_chunk_weights(segment, stats, params, term),
        )
        segment.cache[key] = facts
    return facts


def known_facts(segment: Segment, stats: Stats, params: BM25Params, term: int) -> TermFacts | None:
    """A term's `TermFacts` if they are cached or the term was met before under these
    statistics (they are built then), else None, the term marked as met: a caller that needs
    the weights at a few chunks reads those from the postings on a term's first use instead
    of building all of them (a selective filter right after open), and the second use pays
    once for the whole weights every later query reads."""
    key = _key("facts", term, stats, params)
    facts = segment.cache.get(key)
    if facts is not None:
        return facts
    seen = ("seen", *key[1:])
    if seen in segment.cache:
        return term_facts(segment, stats, params, term)
    _remember(segment, seen, True)
    return None
