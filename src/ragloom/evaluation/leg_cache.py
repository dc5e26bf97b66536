"""Each judged query's lexical and dense candidates fetched once, so that every mode, fusion
method and setting is scored from them without searching or embedding again.

Scoring ranks these lists as a search ranks its legs' answers (the legs a setting asks for
and how deep: `ragloom.engine.legs`; fusion, dense-only floor, controls, top k:
`ragloom.retrieval.ranking`), so a
setting scores exactly what a search with it would return (an unfiltered, unboosted search).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ragloom.engine.legs import plan_legs, tie_depth
from ragloom.index import Index
from ragloom.retrieval.adaptive import Ranked
from ragloom.retrieval.pipeline import DENSE, LEXICAL, ordered
from ragloom.retrieval.ranking import LegAnswers, LegPlan, rank_answers, refine
from ragloom.retrieval.search_options import SearchOptions

DEPTH = 200  # rows fetched per leg and query: covers candidates up to 200 and recall@100


@dataclass
class _List:
    rows: np.ndarray
    scores: np.ndarray
    complete: bool  # the leg had no more rows than these
    ceiling: float | None = None  # lexical: the most BM25 the query could score


def _ceiling(found: list) -> float | None:
    """The query's BM25 ceiling, read back from a lexical search's hits: each scores its raw
    BM25 over the ceiling (`ragloom.retrieval.adaptive`)."""
    for cand in found:
        if cand.score > 0:
            return cand.lexical_score / cand.score
    return None


@dataclass
class LegCache:
    """Lexical and dense top-`depth` lists per query text, fetched from `index` on first use.

    `seconds` sums the time spent fetching each leg (the dense leg's includes embedding the
    query): what each leg costs a search, without fusion or hydration.
    """

    index: Index
    collection: str
    dense: bool  # whether the collection has vectors to search
    depth: int = DEPTH
    expand: str | None = None  # "prf": the lexical leg with RM3 feedback (ragloom.engine.legs)
    seconds: dict[str, float] = field(default_factory=lambda: {LEXICAL: 0.0, DENSE: 0.0})
    fetched: dict[str, int] = field(default_factory=lambda: {LEXICAL: 0, DENSE: 0})
    _lists: dict[str, dict[str, _List]] = field(default_factory=lambda: {LEXICAL: {}, DENSE: {}})
    profile: dict[str, Any] | None = None  # the collection's fusion profile, as searches use
    _keys: dict[int, tuple[str, int]] = field(default_factory=dict)  # row -> (document, n)

    def __post_init__(self) -> None:
        if self.profile is None:
            info = self.index.store.collections().get(self.collection)
            stored = info.config.get("fusion_profile") if info is not None else None
            self.profile = dict(stored or {})

    def warm(self, queries: Iterable[str], on_query: Callable[[], None] | None = None) -> None:
        """Fetch every leg of every query now (so later scoring does no search at all)."""
        legs = (LEXICAL, DENSE) if self.dense else (LEXICAL,)
        queries = list(queries)
        for kind in legs if queries else ():  # load postings, vectors and the model first,
            self._fetch(kind, queries[0], 1)  # so that no query's cost includes them
        self.seconds = dict.fromkeys(self.seconds, 0.0)
        self.fetched = dict.fromkeys(self.fetched, 0)
        for query in queries:
            for kind in legs:
                self._get(kind, query, self.depth)
            if on_query is not None:
                on_query()

    def _fetch(self, kind: str, query: str, depth: int) -> _List:
        started = time.perf_counter()
        expand = self.expand if kind == LEXICAL else None
        options = SearchOptions(mode=kind, top_k=depth, candidates=depth, expand=expand)
        found = self.index.rank(query, options, self.collection).candidates
        self.seconds[kind] += time.perf_counter() - started
        self.fetched[kind] += 1
        rows = np.array([c.row_id for c in found], np.int64)
        if kind == LEXICAL:
            scores = np.array([c.lexical_score for c in found], np.float64)
        else:
            scores = np.array([c.dense_score for c in found], np.float64)
        return _List(rows, scores, len(rows) < depth, _ceiling(found) if kind == LEXICAL else None)

    def _get(self, kind: str, query: str, depth: int) -> _List:
        cached = self._lists[kind].get(query)
        if cached is None or (len(cached.rows) < depth and not cached.complete):
            cached = self._fetch(kind, query, max(depth, self.depth))
            self._lists[kind][query] = cached
        return cached

    def answers(self, query: str, plan: LegPlan) -> LegAnswers:
        """The legs' answers to `query` as `plan` asks for them, from the cached lists."""
        if plan.depth == 0:
            return LegAnswers()
        lexical = self._answer(LEXICAL, query, plan) if plan.mode != DENSE else None
        dense = self._answer(DENSE, query, plan) if plan.mode != LEXICAL else None
        ceiling = self._get(LEXICAL, query, 1).ceiling if lexical is not None else None
        return LegAnswers(lexical, dense, ceiling)

    def _answer(self, kind: str, query: str, plan: LegPlan) -> Ranked:
        """One leg's top `plan.depth`, through the ties at its cut as a search fetches it."""
        depth = plan.depth
        while True:
            found = self._get(kind, query, depth)
            rows, scores = found.rows[:depth], found.scores[:depth]
            deeper = tie_depth(scores, plan.exact, depth) if plan.exact else None
            if deeper is None:
                return rows, scores
            depth = deeper

    def rank_rows(self, query: str, options: SearchOptions) -> list[int]:
        """Chunk rows of a search with `options`, ranked as a search ranks them."""
        plan = plan_legs(query, options, self.dense)
        ranking = rank_answers(plan, self.answers(query, plan), options, profile=self.profile)
        head = refine(ranking.candidates, options)
        top = ordered(head, self.keys_of(head.tied) if head.tied else {})
        return [c.row_id for c in top]

    def keys_of(self, rows: Sequence[int]) -> dict[int, tuple[str, int]]:
        """Each row's stable key (document id, chunk number), which breaks ties as in a search."""
        wanted = [r for r in rows if r not in self._keys]
        if wanted:
            with self.index.store.snapshot() as snap:
                for row, chunk in snap.chunks(wanted).items():
                    self._keys[row] = (chunk.document_id, chunk.n)
        return {r: self._keys[r] for r in rows if r in self._keys}

    def leg_ms_per_query(self, kind: str) -> float | None:
        """Mean milliseconds one fetch of a leg took (None before any)."""
        count = self.fetched[kind]
        return 1000.0 * self.seconds[kind] / count if count else None
