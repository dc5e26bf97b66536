"""One committed version of a collection: its segments, what is deleted, late vectors.

A `CollectionView` never changes. A write produces a new view that shares every unchanged
segment with the old one, so a search holding a view keeps reading exactly that version
while writers move on. Statistics (N, average length, document frequencies) are computed
from the live chunks of the view, so BM25 scores equal those of a fresh build. The legs
that search a view are `ragloom.lexical.bm25_search` and `ragloom.dense.cosine_search`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import numpy as np

from ragloom.filters import FilterNode
from ragloom.segments.segment import Segment

_NO_DOCS = np.zeros(0, np.int64)
KEPT = 64  # masks and counts a part (and filter masks a segment) remembers before starting afresh


def _keep(cache: dict[Any, Any], key: Any, value: Any, limit: int = KEPT) -> Any:
    """Remember `value` under `key` in `cache`, emptied first once it holds over `limit`
    entries (masks and counts: cheap to compute again); returns `value`."""
    if len(cache) > limit:
        cache.clear()
    cache[key] = value
    return value


def unique_sorted(values: np.ndarray) -> np.ndarray:
    """The distinct values of a 1-d array, ascending: `np.unique(values)` without numpy 2's
    import of its masked arrays on first use (57 ms of a one-shot search)."""
    ordered = np.sort(values)
    if len(ordered) < 2:
        return ordered
    return ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))]


@dataclass(frozen=True, eq=False)
class Part:
    """A segment as one version sees it: which chunks are deleted, which vectors came late."""

    segment: Segment
    dead: np.ndarray | None = None  # bool per chunk, True = deleted
    n_dead: int = 0
    dead_length: float = 0.0
    late_docs: np.ndarray = field(default_factory=lambda: _NO_DOCS)  # sorted chunk numbers
    late_vectors: np.ndarray | None = None  # (len(late_docs), dimension)
    cache: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def n_live(self) -> int:
        return self.segment.n - self.n_dead

    @property
    def live_length(self) -> float:
        return self.segment.total_length - self.dead_length

    def df(self, term: int) -> int:
        """Live chunks containing the term."""
        if not self.n_dead:
            return self.segment.df(term)
        key = ("df", term)
        cached = self.cache.get(key)
        if cached is None:
            docs, _ = self.segment.postings(term)
            cached = self.cache[key] = len(docs) - int(self.dead[docs].sum())  # type: ignore[index]
        return cached

    def alive(self) -> np.ndarray | None:
        """Bool per chunk (None when nothing is deleted); remembered, since every unfiltered
        search of a part with deletes asks (do not modify it)."""
        if self.dead is None:
            return None
        # kept with the deletes it was made from: a copy of this part with other deletes
        # shares the cache, and an id() key could name a freed array's successor
        remembered = self.cache.get("alive")
        if remembered is None or remembered[0] is not self.dead:
            remembered = self.cache["alive"] = (self.dead, ~self.dead)
        return remembered[1]

    def allowed(self, mask: np.ndarray) -> int:
        """How many chunks `mask` (an `eligible` or `alive` answer of this part, which are
        remembered) allows; remembered beside that very array (counting a 220k-480k part's
        flags took 10-20 us a query, for every part of every unfiltered search with deletes)."""
        key = ("allowed", id(mask))
        remembered = self.cache.get(key)
        if remembered is None or remembered[0] is not mask:
            remembered = _keep(self.cache, key, (mask, int(np.count_nonzero(mask))))
        return remembered[1]

    def listed(self, mask: np.ndarray) -> np.ndarray:
        """The chunk numbers `mask` (as for `allowed`) allows, remembered beside that very
        array while they are fewer than a quarter of the part's chunks: a selective filter's
        chunks are scored one by one (listing 100k flags took ~14 us a query, 1M ~140 us)."""
        key = ("listed", id(mask))
        remembered = self.cache.get(key)
        if remembered is not None and remembered[0] is mask:
            return remembered[1]
        docs = np.flatnonzero(mask)
        if len(docs) < self.segment.n // 4:
            _keep(self.cache, key, (mask, docs))
        return docs

    def deleting(self, docs: np.ndarray) -> Part:
        """This part with more chunks deleted (chunk numbers; already-dead ones ignored)."""
        dead = np.zeros(self.segment.n, bool) if self.dead is None else self.dead.copy()
        docs = np.asarray(docs, np.int64)
        docs = docs[~dead[docs]]
        if not len(docs):
            return self
        dead[docs] = True
        keep = ~np.isin(self.late_docs, docs)
        late = self.late_vectors[keep] if self.late_vectors is not None else None
        return Part(
            self.segment,
            dead,
            self.n_dead + len(docs),
            self.dead_length + float(self.segment.lengths[docs].sum()),
            self.late_docs[keep],
            late if late is None or len(late) else None,
        )

    def with_late(self, docs: np.ndarray, vectors: np.ndarray) -> Part:
        """This part with vectors for chunks that had none (or another model's)."""
        docs = np.asarray(docs, np.int64)
        if self.late_vectors is not None:
            keep = ~np.isin(self.late_docs, docs)
            docs = np.concatenate([self.late_docs[keep], docs])
            vectors = np.vstack([self.late_vectors[keep], vectors])
        order = np.argsort(docs, kind="stable")
        return replace(self, late_docs=docs[order], late_vectors=vectors[order], cache={})

    def n_missing(self, epoch: int) -> int:
        """Live chunks of this part without a usable vector (remembered per part)."""
        key = ("missing", epoch)
        found = self.cache.get(key)
        if found is None:
            missing = ~self.has_vector(epoch)
            if self.dead is not None:
                missing &= ~self.dead
            found = self.cache[key] = int(missing.sum())
        return found

    def has_vector(self, epoch: int) -> np.ndarray:
        """Bool per chunk: a usable vector exists (live or not)."""
        seg = self.segment
        if seg.has_vector is not None and seg.vector_epoch == epoch:
            out = np.array(seg.has_vector, bool)
        else:
            out = np.zeros(seg.n, bool)
        out[self.late_docs] = True
        return out

    def eligible(self, node: FilterNode | None, key: str | None) -> np.ndarray | None:
        """Live chunks passing the filter (None: every chunk, nothing deleted, no filter)."""
        if node is None:
            return self.alive()
        cache_key = ("filter", key)
        mask = self.cache.get(cache_key)
        if mask is None:
            masks = self.segment.masks  # (the segment's own: shared by its parts)
            base = masks.get(cache_key)
            if base is None:
                base = _keep(masks, cache_key, self.segment.columns.evaluate(node))
            mask = _keep(self.cache, cache_key, base if self.dead is None else base & ~self.dead)
        return mask

    def vector(self, doc: int, epoch: int) -> np.ndarray | None:
        """The vector of one chunk, if it has one."""
        i = int(np.searchsorted(self.late_docs, doc))
        if i < len(self.late_docs) and int(self.late_docs[i]) == doc:
            return self.late_vectors[i]  # type: ignore[index]
        seg = self.segment
        if seg.vectors is not None and seg.vector_epoch == epoch and seg.has_vector[doc]:  # type: ignore[index]
            return seg.vectors[doc]
        return None


@dataclass(frozen=True, eq=False)
class CollectionView:
    """The searchable state of one collection at one generation of the index."""

    collection_id: int
    name: str
    config: Any  # CollectionConfig
    generation: int
    parts: tuple[Part, ...]  # ascending row ranges: file segments first, then memory ones
    files: int = 0  # how many leading parts are file segments
    flushed_upto: int = 0  # chunk rows <= this live in file segments
    max_row: int = 0  # highest chunk row this view has seen
    epoch: int = 0  # vectors of another epoch (another model) are not used
    cache: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)

    # -- statistics -------------------------------------------------------------------
    @cached_property
    def n_live(self) -> int:
        return sum(p.n_live for p in self.parts)

    @cached_property
    def total_length(self) -> float:
        return sum(p.live_length for p in self.parts)

    @property
    def avgdl(self) -> float:
        return self.total_length / self.n_live if self.n_live else 0.0

    def field_values(self, key: str) -> list[Any]:
        """The values a filter on `key` reads in this view's segments (deleted chunks' too:
        enough to tell which kinds the field holds)."""
        return [v for p in self.parts for v in p.segment.columns.values_of(key)]

    def df(self, term: int) -> int:
        """Live chunks containing the term (remembered: a view never changes)."""
        key = ("df", term)
        found = self.cache.get(key)
        if found is None:
            found = _keep(self.cache, key, sum(p.df(term) for p in self.parts), 200_000)
        return found

    @cached_property
    def n_vectors(self) -> int:
        """Live chunks with a usable vector."""
        return sum(p.n_live - p.n_missing(self.epoch) for p in self.parts)

    @property
    def n_pending(self) -> int:
        """Live chunks still waiting for a vector."""
        return self.n_live - self.n_vectors

    # -- locating rows ----------------------------------------------------------------
    def locate(self, rows: Sequence[int] | np.ndarray) -> list[tuple[int, np.ndarray, np.ndarray]]:
        """Group rows by part: (part index, positions in `rows`, chunk numbers) per part."""
        rows = np.asarray(rows, np.int64)
        out: list[tuple[int, np.ndarray, np.ndarray]] = []
        if not len(rows):
            return out
        firsts = np.array([p.segment.first_row for p in self.parts], np.int64)
        which = np.searchsorted(firsts, rows, side="right") - 1
        for index in unique_sorted(which[which >= 0]).tolist():
            positions = np.flatnonzero(which == index)
            docs = self.parts[index].segment.row_index(rows[positions])
            found = docs >= 0
            out.append((index, positions[found], docs[found]))
        return out

    def live_rows(self, rows: Sequence[int]) -> list[int]:
        """Which of `rows` are live chunks of this view."""
        live: list[int] = []
        for index, positions, docs in self.locate(rows):
            dead = self.parts[index].dead
            keep = positions if dead is None else positions[~dead[docs]]
            live.extend(int(rows[i]) for i in keep.tolist())
        return sorted(live)

    def metadata(self, rows: Sequence[int]) -> dict[int, dict[str, Any]]:
        """Merged metadata (document's and chunk's) of the given rows."""
        out: dict[int, dict[str, Any]] = {}
        rows = list(rows)
        for index, positions, docs in self.locate(rows):
            columns = self.parts[index].segment.columns
            for i, doc in zip(positions.tolist(), docs.tolist()):
                out[rows[i]] = columns.row(doc)
        return out

    def vectors_of(self, rows: Sequence[int]) -> np.ndarray:
        """Vectors of the given rows in order (a zero row where a chunk has none)."""
        dimension = self.dimension or 0
        out = np.zeros((len(rows), dimension), np.float32)
        for index, positions, docs in self.locate(rows):
            part = self.parts[index]
            for i, doc in zip(positions.tolist(), docs.tolist()):
                vector = part.vector(doc, self.epoch)
                if vector is not None:
                    out[i] = vector
        return out

    @property
    def dimension(self) -> int | None:
        embedding = getattr(self.config, "embedding", None) or {}
        value = embedding.get("dimension")
        return int(value) if value else None

    # -- new versions -----------------------------------------------------------------
    def evolve(
        self,
        generation: int,
        added: Sequence[Part] = (),
        removed: Sequence[int] = (),
        late: Mapping[int, np.ndarray] | None = None,
        **changes: Any,
    ) -> CollectionView:
        """The next version: `added` parts appended (rows above every existing one), `removed`
        rows deleted, `late` vectors attached to existing chunks."""
        parts = list(self.parts)
        for index, _, docs in self.locate(list(removed)):
            parts[index] = parts[index].deleting(docs)
        if late:
            rows = sorted(late)
            for index, positions, docs in self.locate(rows):
                vectors = np.stack([late[rows[i]] for i in positions.tolist()])
                parts[index] = parts[index].with_late(docs, vectors)
        parts.extend(added)
        max_row = max([self.max_row, *(p.segment.last_row for p in added)])
        return replace(
            self,
            generation=generation,
            parts=tuple(parts),
            max_row=max_row,
            cache={},
            **changes,
        )
