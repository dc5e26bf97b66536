"""Exact BM25 top-k over segments, scoring only the chunks that can still make the top k.

`search` returns the same chunks, scores (to the last bit) and order as scoring every
matching chunk (`exhaustive`): scores are summed term by term in query order with the same
arithmetic; ties go to the lower row id. It skips work in two ways (MaxScore with block-max
bounds): terms whose best possible contribution cannot lift a chunk to the current k-th score
supply no candidates, and blocks of postings whose bound cannot either are never read.
The threshold comes from a first pass over the most promising blocks and rises segment by
segment. With numba (`ragloom.lexical.kernels`) compiled kernels do the same: a segment's
few matches are all scored; more go to block-max MaxScore (`ragloom.lexical.maxscore`) when
nearly all of them are postings of very common terms (read by chunk number), else, or when its
bounds do not prune, to block-max windows of chunks (`ragloom.lexical.windows`); largest
segment first so the k-th score it reaches lets the others skip more.
Pure numeric code: statistics (N, average length, df) come from the caller.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ragloom.lexical import kernels
from ragloom.lexical.bm25 import BM25Params, bm25_weights
from ragloom.lexical.term_weights import (
    Stats,
    known_facts,
    term_facts,
    term_weights,
    weights_by_chunk,
)
from ragloom.segments.segment import BLOCK, Segment
from ragloom.segments.view import unique_sorted

SMALL_SEGMENT = 16384  # below this many chunks, scoring everything is cheaper than pruning
SMALL_WORK = 50_000  # below this many postings for the query, likewise
SEED_BLOCKS = 8  # blocks per term scored first to set the threshold
SAFETY = 1e-9  # relative margin: bounds are summed in another order than scores
HOPELESS = 0.3  # when candidate postings exceed this share of the chunks, score everything
# With the compiled kernels: below this many postings for the query in a segment, every match is
# scored (tens of microseconds); from it on, the pruning kernels run.
PRUNE_WORK = 50_000
# Block-max MaxScore gives up for windows once more than 1 in MAXSCORE_SHARE postings passed
# needed a chunk looked up in the non-essential terms (~25 ns each, against ~1 ns a posting
# scored window by window): the bounds were not selective enough for this query.
MAXSCORE_SHARE = 16
# MaxScore is tried only when at most 1 in MAXSCORE_WALKED of the query's postings in a segment
# belong to terms it cannot read by chunk number (terms in at most half the chunks): those it
# walks or seeks at ~25 ns a posting. Queries of a very common word among rarer ones (the
# scale bench's hybrid queries, a chunk's first words) took 1.6-1.8x the windows' time in
# MaxScore at the p50 and 2.3-3.9x at the p95, 100k and 1M, though a few were faster in it
# (bench/lexical_kernel_choice.py). 0: MaxScore is always tried first.
MAXSCORE_WALKED = 64
FEW_OFFERED = 64  # up to this many offered pairs are sorted whole (no partition first)


@dataclass(frozen=True)
class Target:
    """One segment to search: `eligible` marks chunks that may be returned (live, allowed)."""

    segment: Segment
    eligible: np.ndarray | None  # bool per chunk; None: every chunk
    filtered: bool = False  # a metadata filter narrows `eligible` (not only deletes)
    allowed: int | None = None  # how many chunks `eligible` allows, when the caller knows
    listed: np.ndarray | None = None  # the chunks `eligible` allows, when the caller has them


def _score_all(
    target: Target, terms: Sequence[int], stats: Stats, params: BM25Params
) -> tuple[np.ndarray, np.ndarray]:
    """Every matching chunk's score: the reference computation."""
    segment = target.segment
    scores = np.zeros(segment.n, np.float64)
    for term in terms:
        docs, weights = term_weights(segment, stats, params, term)
        scores[docs] += weights
    keep = scores > 0
    if target.eligible is not None:
        keep &= target.eligible
    docs = np.flatnonzero(keep)
    return docs, scores[docs]


def _score_docs(
    segment: Segment, docs: np.ndarray, terms: Sequence[int], stats: Stats, params: BM25Params
) -> np.ndarray:
    """Exact scores of the given chunks (ascending chunk numbers), summed in query order. A
    very common term's weights by chunk number are read at the chunks (one read each, 0.0
    where absent adds nothing) instead of bisecting its long postings once a chunk; a term
    met for the first time is weighed at the chunks from its postings (`known_facts`)."""
    scores = np.zeros(len(docs), np.float64)
    keys = docs.astype(np.int64)
    known = {term: known_facts(segment, stats, params, term) for term in dict.fromkeys(terms)}
    first_use: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for term in terms:
        facts = known[term]
        if facts is None:
            if term not in first_use:  # a repeated query word is weighed once
                first_use[term] = _weights_at(segment, keys, term, stats, params)
            hit, weights = first_use[term]
            if len(weights):
                scores[hit] += weights
            continue
        if facts.common:
            scores += weights_by_chunk(segment, stats, params, term)[docs]
            continue
        hit, at = _found_at(facts.docs, keys)
        if len(at):
            scores[hit] += facts.weights[at]
    return scores


def _found_at(postings: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(which of the chunks `keys` are in a term's postings, their positions there)."""
    if not len(postings) or not len(keys):
        return np.zeros(len(keys), bool), np.zeros(0, np.int64)
    # The keys in the postings' own dtype: a mismatch makes numpy copy (and read) them all.
    pos = np.minimum(postings.searchsorted(keys.astype(postings.dtype)), len(postings) - 1)
    hit = postings[pos] == keys
    return hit, pos[hit]


def _weights_at(
    segment: Segment, keys: np.ndarray, term: int, stats: Stats, params: BM25Params
) -> tuple[np.ndarray, np.ndarray]:
    """(which of the chunks hold the term, its BM25 weights there): read from the postings at
    those chunks only, with the arithmetic of the cached weights (the same bits)."""
    postings, tfs = segment.postings(term)
    hit, at = _found_at(postings, keys)
    lengths = segment.lengths[keys[hit]]
    weights = bm25_weights(
        tfs[at].astype(np.float64), lengths, stats.idf[term], stats.avgdl, params
    )
    return hit, weights


def _block_bounds(
    segment: Segment, index: int, idf: float, stats: Stats, params: BM25Params
) -> np.ndarray:
    """Upper bound of the term's weight in each of its blocks."""
    lo, hi = int(segment.block_ptr[index]), int(segment.block_ptr[index + 1])
    max_tf = segment.block_max_tf[lo:hi].astype(np.float64)
    min_len = segment.block_min_len[lo:hi].astype(np.float64)
    return bm25_weights(max_tf, min_len, idf, stats.avgdl, params)


def _block_docs(segment: Segment, index: int, blocks: np.ndarray) -> np.ndarray:
    """Chunk numbers in the given blocks of a term."""
    lo, hi = int(segment.ptr[index]), int(segment.ptr[index + 1])
    starts = lo + blocks.astype(np.int64) * BLOCK
    ends = np.minimum(starts + BLOCK, hi)
    sizes = ends - starts
    if not len(sizes):
        return np.zeros(0, np.int64)
    offsets = np.repeat(starts - np.concatenate(([0], np.cumsum(sizes)[:-1])), sizes)
    return segment.docs[np.arange(int(sizes.sum())) + offsets].astype(np.int64)


class _Best:
    """The best k (score, row) pairs seen so far, and the score to beat."""

    def __init__(self, k: int) -> None:
        self.k = k
        self.rows = np.zeros(0, np.int64)
        self.scores = np.zeros(0, np.float64)

    def offer(self, rows: np.ndarray, scores: np.ndarray) -> None:
        """Consider more (row, score) pairs; a row offered twice has the same exact score."""
        if len(self.scores) >= self.k:  # below the k-th score nothing can enter (ties can)
            keep = scores >= self.scores[-1]
            rows, scores = rows[keep], scores[keep]
        if not len(scores):
            return
        if len(scores) > max(self.k, FEW_OFFERED):  # only the k best (ties kept) can matter
            floor = np.partition(scores, len(scores) - self.k)[len(scores) - self.k]
            keep = scores >= floor
            rows, scores = rows[keep], scores[keep]
        if len(self.rows):
            rows = np.concatenate([self.rows, rows])
            scores = np.concatenate([self.scores, scores])
        order = np.lexsort((rows, -scores))
        rows, scores = rows[order], scores[order]
        repeated = rows[1:] == rows[:-1]  # a row offered again sits beside its first entry
        if repeated.any():
            fresh = np.concatenate(([True], ~repeated))
            rows, scores = rows[fresh], scores[fresh]
        self.rows, self.scores = rows[: self.k], scores[: self.k]

    @property
    def threshold(self) -> float:
        """A chunk must score at least this to enter (0 until k chunks are known)."""
        return float(self.scores[-1]) if len(self.scores) >= self.k else 0.0


def _pruned(
    target: Target, terms: Sequence[int], stats: Stats, params: BM25Params, best: _Best
) -> None:
    """Offer the segment's candidates that can beat `best`'s threshold."""
    segment = target.segment
    unique, counts = np.unique(np.asarray(terms, np.int64), return_counts=True)
    present = [(int(t), int(m), segment.term_index(int(t))) for t, m in zip(unique, counts)]
    present = [(t, m, i) for t, m, i in present if i >= 0]
    if not present:
        return
    bounds = {t: m * _block_bounds(segment, i, stats.idf[t], stats, params) for t, m, i in present}
    upper = {t: float(b.max()) if len(b) else 0.0 for t, b in bounds.items()}
    total = sum(upper.values())

    def scored(docs: np.ndarray) -> None:
        docs = unique_sorted(docs)
        if target.eligible is not None:
            docs = docs[target.eligible[docs]]
        if not len(docs):
            return
        scores = _score_docs(segment, docs, terms, stats, params)
        keep = scores > 0
        best.offer(segment.rows[docs[keep]], scores[keep])

    # Seed: the most promising blocks of every term, so the threshold starts high.
    seeds = []
    for t, _, i in present:
        order = np.argsort(-bounds[t], kind="stable")[:SEED_BLOCKS]
        seeds.append(_block_docs(segment, i, np.sort(order)))
    scored(np.concatenate(seeds))
    theta = best.threshold * (1.0 - SAFETY)
    if theta <= 0:
        _exhaustive_into(target, terms, stats, params, best)
        return
    # MaxScore: terms whose bounds together stay below theta cannot make a candidate alone.
    essential = []
    running = 0.0
    for t, _, i in sorted(present, key=lambda item: upper[item[0]]):
        running += upper[t]
        if running >= theta:
            essential.append((t, i))
    kept = []
    for t, i in essential:
        others = total - upper[t]
        keep = np.flatnonzero(bounds[t] + others >= theta)
        if len(keep):
            kept.append((i, keep))
    if sum(len(keep) for _, keep in kept) * BLOCK > HOPELESS * segment.n:
        # Nearly every chunk can still make the top k (all query terms are very common):
        # scoring everything in one pass is cheaper than looking candidates up.
        _exhaustive_into(target, terms, stats, params, best)
        return
    candidates = [_block_docs(segment, i, keep) for i, keep in kept]
    if candidates:
        scored(np.concatenate(candidates))


def _kernel_into(
    target: Target, terms: Sequence[int], stats: Stats, params: BM25Params, best: _Best
) -> None:
    """Score the segment in compiled code: every match when there are few or a filter
    applies, else pruned by block maxima (the same chunks and scores, bit for bit, as
    `_score_all` ranks first): MaxScore first only when `MAXSCORE_WALKED` allows, else
    windows. Bounds ignore the filter, so with one they prune little and cost more than they
    save (1M, hybrid with a 1 % filter: 9-13 % slower pruned); deletes alone do not stop the
    pruning."""
    segment = target.segment
    facts = [term_facts(segment, stats, params, term) for term in terms]
    work = sum(f.span[1] - f.span[0] for f in facts)
    if not work:  # none of the query's terms is here (a rare term, a small tail segment)
        return
    if work < PRUNE_WORK or target.filtered:
        postings = [(f.docs, f.weights) for f in facts]
        docs, scores = kernels.score_top(segment.n, postings, target.eligible, best.k)
    else:
        walked = sum(f.span[1] - f.span[0] for f in facts if not f.common)
        share = MAXSCORE_SHARE if walked * MAXSCORE_WALKED <= work else 0
        by_chunk = [  # (read only by MaxScore: built for it alone)
            weights_by_chunk(segment, stats, params, t) if share and f.common else None
            for t, f in zip(terms, facts, strict=True)
        ]
        docs, scores = kernels.score_top_pruned(
            segment.docs,
            [f.span for f in facts],
            [f.weights for f in facts],
            [f.maxima for f in facts],
            segment.n,
            target.eligible,
            best.k,
            best.threshold,
            share,
            [f.least for f in facts],
            by_chunk,
        )
    best.offer(segment.rows[docs], scores)


def _exhaustive_into(
    target: Target, terms: Sequence[int], stats: Stats, params: BM25Params, best: _Best
) -> None:
    docs, scores = _score_all(target, terms, stats, params)
    best.offer(target.segment.rows[docs], scores)


def _selective(
    target: Target, terms: Sequence[int], stats: Stats, params: BM25Params, best: _Best
) -> bool:
    """Score the eligible chunks directly when there are few of them; True if done."""
    eligible = target.eligible
    if eligible is None:
        return False
    n = target.segment.n
    if target.allowed is not None and target.allowed >= -(-n // 4):
        return False  # (enough below is at most n / 4: no term is in more than n chunks)
    segment = target.segment  # (postings counted from the offsets: no weights built)
    work = sum(segment.df(t) for t in set(terms))
    enough = -(-work // (4 * max(len(terms), 1)))  # eligible chunks from which to score postings
    if enough <= 0:
        return False
    if target.allowed is not None:  # counted once per part and filter (Part.allowed)
        if target.allowed >= enough:
            return False
    # Else counted on a prefix first: with deletes alone it settles the question at a fraction
    # of the cost (counting 480k flags takes ~20 us a segment); listing them all costs more.
    elif np.count_nonzero(eligible[: 2 * enough]) >= enough or np.count_nonzero(eligible) >= enough:
        return False
    docs = target.listed if target.listed is not None else np.flatnonzero(eligible)
    scores = _score_docs(segment, docs, terms, stats, params)
    keep = scores > 0
    best.offer(target.segment.rows[docs[keep]], scores[keep])
    return True


def _exhaustive_together(
    targets: Sequence[Target], terms: Sequence[int], stats: Stats, params: BM25Params, best: _Best
) -> None:
    """Score every matching chunk of several small segments in one array (less overhead)."""
    if len(targets) == 1:
        _exhaustive_into(targets[0], terms, stats, params, best)
        return
    sizes = [t.segment.n for t in targets]
    offsets = np.concatenate(([0], np.cumsum(sizes)[:-1])).tolist()
    scores = np.zeros(sum(sizes), np.float64)
    for term in terms:
        for target, offset in zip(targets, offsets):
            docs, weights = term_weights(target.segment, stats, params, term)
            if len(docs):
                scores[docs + offset if offset else docs] += weights
    keep = scores > 0
    for target, offset, size in zip(targets, offsets, sizes):
        if target.eligible is not None:
            keep[offset : offset + size] &= target.eligible
    found = np.flatnonzero(keep)
    rows = np.concatenate([t.segment.rows for t in targets])
    best.offer(rows[found], scores[found])


def search(
    targets: Sequence[Target],
    terms: Sequence[int],
    k: int,
    stats: Stats,
    params: BM25Params,
    prune: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """Top `k` (row ids, scores) over the segments, best first, ties to the lower row id.

    `terms` are the query's term ids in query order, repeats kept (each occurrence counts).
    With `prune=False` every matching chunk is scored (the reference for tests).
    """
    best = _Best(k)
    if k <= 0 or not terms:
        return best.rows, best.scores
    unique = set(terms)
    small: list[Target] = []
    large: list[Target] = []
    compiled = prune and kernels.serve(lambda: any(t.segment.n >= SMALL_SEGMENT for t in targets))
    if compiled:  # the largest first: its k-th score lets the smaller ones skip more
        targets = sorted(targets, key=lambda target: -target.segment.n)
    for target in targets:
        if compiled:  # few eligible chunks: score those; else the compiled kernels
            if _selective(target, terms, stats, params, best):
                continue
            _kernel_into(target, terms, stats, params, best)
            continue
        (small if not prune or _cheap(target, unique) else large).append(target)
    for target in sorted(large, key=lambda target: -target.segment.n):
        if not _selective(target, terms, stats, params, best):
            _pruned(target, terms, stats, params, best)
    if small:
        _exhaustive_together(small, terms, stats, params, best)
    return best.rows, best.scores


def _cheap(target: Target, unique: set[int]) -> bool:
    """Scoring every match beats pruning: a small segment, or few postings for the query (the
    postings are counted only for a large segment)."""
    segment = target.segment
    return segment.n < SMALL_SEGMENT or sum(segment.df(t) for t in unique) < SMALL_WORK


WeightsOf = Callable[[Segment, int], tuple[np.ndarray, np.ndarray]]
