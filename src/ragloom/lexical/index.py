"""In-memory inverted index for one collection, updated incrementally.

Chunks occupy *slots* (append-only positions). Postings live in immutable segments, one per
batch added; deleted slots are masked out and their statistics subtracted, so scores always
use the live corpus's N, document frequencies and average length: the same numbers a fresh
build of that corpus would use. Segments are merged (dropping dead slots) when they pile up.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np

from ragloom.lexical.bm25 import BM25Params, bm25_idf, bm25_weights
from ragloom.topn import best_first

MAX_SEGMENTS = 8


@dataclass(frozen=True)
class Postings:
    """Term statistics of one chunk: term ids and their (possibly title-weighted) frequencies."""

    term_ids: np.ndarray  # uint32, unique
    tfs: np.ndarray  # float32, same length

    @property
    def length(self) -> float:
        return float(self.tfs.sum(dtype=np.float64))

    def to_bytes(self) -> bytes:
        return self.term_ids.astype("<u4").tobytes() + self.tfs.astype("<f4").tobytes()

    @classmethod
    def from_bytes(cls, blob: bytes) -> Postings:
        half = len(blob) // 2
        return cls(np.frombuffer(blob[:half], "<u4"), np.frombuffer(blob[half:], "<f4"))


def count_postings(term_lists: Sequence[Sequence[str]], vocab: dict[str, int]) -> list[Postings]:
    """Postings of many chunks at once: term ids with their counts, vectorized over the batch."""
    lengths = np.fromiter(map(len, term_lists), np.int64, len(term_lists))
    flat = chain.from_iterable(term_lists)
    ids = np.fromiter(map(vocab.__getitem__, flat), np.int64, int(lengths.sum()))
    width = int(ids.max()) + 1 if len(ids) else 1
    keys = np.repeat(np.arange(len(term_lists), dtype=np.int64), lengths) * width + ids
    unique, counts = np.unique(keys, return_counts=True)
    chunk_of, term_of = np.divmod(unique, width)
    bounds = np.searchsorted(chunk_of, np.arange(len(term_lists) + 1))
    terms32, counts32 = term_of.astype(np.uint32), counts.astype(np.float32)
    return [
        Postings(terms32[lo:hi], counts32[lo:hi])
        for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist())
    ]


@dataclass(frozen=True)
class _Segment:
    """Postings of a batch of slots, grouped by term (CSR layout keyed by term id)."""

    terms: np.ndarray  # sorted unique term ids in this segment
    ptr: np.ndarray  # postings of terms[i] are slots[ptr[i]:ptr[i+1]]
    slots: np.ndarray
    tfs: np.ndarray

    @classmethod
    def build(cls, slot_ids: np.ndarray, postings: Sequence[Postings]) -> _Segment:
        counts = np.fromiter((len(p.term_ids) for p in postings), np.int64, len(postings))
        terms = np.concatenate([p.term_ids for p in postings]) if postings else np.zeros(0, "u4")
        tfs = np.concatenate([p.tfs for p in postings]) if postings else np.zeros(0, "f4")
        slots = np.repeat(slot_ids.astype(np.int64), counts)
        order = np.argsort(terms, kind="stable")
        terms, tfs, slots = terms[order], tfs[order], slots[order]
        uniq, starts = np.unique(terms, return_index=True)
        ptr = np.append(starts, len(terms)).astype(np.int64)
        return cls(uniq.astype(np.int64), ptr, slots, tfs.astype(np.float64))

    def lookup(self, term_id: int) -> tuple[np.ndarray, np.ndarray] | None:
        i = int(np.searchsorted(self.terms, term_id))
        if i == len(self.terms) or self.terms[i] != term_id:
            return None
        lo, hi = self.ptr[i], self.ptr[i + 1]
        return self.slots[lo:hi], self.tfs[lo:hi]


class LexicalIndex:
    """BM25 index over chunk row ids; `add`/`remove` keep statistics exact for the live set."""

    def __init__(self) -> None:
        self._rows = np.zeros(0, np.int64)  # slot -> chunk row id
        self._lengths = np.zeros(0, np.float64)  # slot -> document length
        self._alive = np.zeros(0, bool)
        self._slot_of_row: dict[int, int] = {}
        self._postings_of_slot: list[Postings | None] = []
        self._segments: list[_Segment] = []
        self._df = np.zeros(0, np.int64)
        self._n_live = 0
        self._total_length = 0.0
        self._cache: dict[tuple[int, float, float], tuple[np.ndarray, np.ndarray]] = {}

    # -- statistics -------------------------------------------------------------------
    @property
    def n_docs(self) -> int:
        return self._n_live

    @property
    def avgdl(self) -> float:
        return self._total_length / self._n_live if self._n_live else 0.0

    @property
    def vocabulary_size(self) -> int:
        """Distinct terms occurring in live chunks."""
        return int(np.count_nonzero(self._df))

    def df(self, term_id: int) -> int:
        return int(self._df[term_id]) if term_id < len(self._df) else 0

    def __contains__(self, row_id: int) -> bool:
        return row_id in self._slot_of_row

    # -- updates ----------------------------------------------------------------------
    def add(self, row_ids: Sequence[int], postings: Sequence[Postings]) -> None:
        """Add chunks (row ids not yet present) with their postings as one new segment."""
        if not row_ids:
            return
        first = len(self._rows)
        slots = np.arange(first, first + len(row_ids), dtype=np.int64)
        for row, slot in zip(row_ids, slots.tolist()):
            if row in self._slot_of_row:
                raise ValueError(f"chunk row {row} is already indexed")
            self._slot_of_row[row] = slot
        lengths = np.fromiter((p.length for p in postings), np.float64, len(postings))
        self._rows = np.concatenate([self._rows, np.asarray(row_ids, np.int64)])
        self._lengths = np.concatenate([self._lengths, lengths])
        self._alive = np.concatenate([self._alive, np.ones(len(row_ids), bool)])
        self._postings_of_slot.extend(postings)
        all_terms = np.concatenate([p.term_ids for p in postings]).astype(np.int64)
        if len(all_terms):
            self._grow_df(int(all_terms.max()) + 1)
            self._df += np.bincount(all_terms, minlength=len(self._df))
        self._n_live += len(row_ids)
        self._total_length += float(lengths.sum())
        self._segments.append(_Segment.build(slots, postings))
        self._changed()

    def remove(self, row_ids: Sequence[int]) -> None:
        """Forget chunks; unknown row ids are ignored."""
        slots = [self._slot_of_row.pop(r) for r in row_ids if r in self._slot_of_row]
        if not slots:
            return
        for slot in slots:
            post = self._postings_of_slot[slot]
            assert post is not None
            self._df[post.term_ids.astype(np.int64)] -= 1
            self._total_length -= float(self._lengths[slot])
            self._alive[slot] = False
            self._postings_of_slot[slot] = None
        self._n_live -= len(slots)
        if self._n_live == 0:
            self._total_length = 0.0
        self._changed()

    def _grow_df(self, size: int) -> None:
        if size > len(self._df):
            grown = np.zeros(max(size, 2 * len(self._df)), np.int64)
            grown[: len(self._df)] = self._df
            self._df = grown

    def _changed(self) -> None:
        self._cache.clear()
        dead = len(self._rows) - self._n_live
        if len(self._segments) > MAX_SEGMENTS or (dead > 1024 and dead > self._n_live):
            self._compact()

    def _compact(self) -> None:
        """Rebuild as one segment over live slots only (renumbering slots)."""
        live = np.flatnonzero(self._alive)
        rows = self._rows[live]
        postings = [self._postings_of_slot[s] for s in live.tolist()]
        self._rows = rows
        self._lengths = self._lengths[live]
        self._alive = np.ones(len(live), bool)
        self._postings_of_slot = list(postings)
        self._slot_of_row = {int(r): i for i, r in enumerate(rows.tolist())}
        new_slots = np.arange(len(live), dtype=np.int64)
        self._segments = [_Segment.build(new_slots, postings)] if len(live) else []  # type: ignore[arg-type]

    # -- scoring ----------------------------------------------------------------------
    def term_weights(self, term_id: int, params: BM25Params) -> tuple[np.ndarray, np.ndarray]:
        """Live slots containing the term and the term's BM25 contribution to each."""
        key = (term_id, params.k1, params.b)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        parts = [hit for seg in self._segments if (hit := seg.lookup(term_id)) is not None]
        if not parts:
            result = (np.zeros(0, np.int64), np.zeros(0, np.float64))
        else:
            slots = np.concatenate([p[0] for p in parts]) if len(parts) > 1 else parts[0][0]
            tfs = np.concatenate([p[1] for p in parts]) if len(parts) > 1 else parts[0][1]
            keep = self._alive[slots]
            if not keep.all():
                slots, tfs = slots[keep], tfs[keep]
            idf = bm25_idf(self.df(term_id), self._n_live)
            result = (slots, bm25_weights(tfs, self._lengths[slots], idf, self.avgdl, params))
        if len(self._cache) > 100_000:
            self._cache.clear()
        self._cache[key] = result
        return result

    def search(
        self,
        query_term_ids: Sequence[int],
        top_n: int,
        params: BM25Params,
        allowed_rows: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Top `top_n` chunk row ids and BM25 scores, best first (ties: earlier-added first).

        `allowed_rows`, when given, restricts the candidates (filters pushed into the leg).
        """
        if top_n <= 0 or self._n_live == 0 or not query_term_ids:
            return np.zeros(0, np.int64), np.zeros(0, np.float64)
        scores = np.zeros(len(self._rows), np.float64)
        for term_id in query_term_ids:
            slots, weights = self.term_weights(term_id, params)
            scores[slots] += weights
        if allowed_rows is not None:
            scores[~np.isin(self._rows, allowed_rows)] = 0.0
        candidates = np.flatnonzero(scores > 0)
        best = best_first(candidates, scores, top_n)
        return self._rows[best], scores[best]
