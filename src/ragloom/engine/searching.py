"""The read path, in one snapshot:

    collection's legs (`ragloom.engine.legs`) -> fusion -> controls, with the steps the
    options switch on (`ragloom.engine.steps`: expansion, rerank, hops) -> hydration
    (chunk text and metadata from the same snapshot) -> the `SearchResult`, built here only;
    a plain lexical query whose top k holds no tie goes from its leg to its hits directly
    (`ragloom.engine.plain`: the same hits, without the pool, fusion and controls).

Everything one search returns (ranking, chunk text, metadata, vectors, packed document text)
comes from one committed version of the index, so a document being replaced is found old or
new, never neither, never a mix. Several collections searched together share one snapshot
and one embedding of the query per model. A read that lost its store connection midway runs
again in a fresh snapshot (`Searcher.read`), the one place reads are retried.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

import numpy as np

from ragloom.context import GROUNDING_INSTRUCTION, PackedContext, pack_context
from ragloom.engine.embedders import Embedders, QueryVectors
from ragloom.engine.hydrate import hits_of, plain_hits
from ragloom.engine.legs import Legs, open_legs
from ragloom.engine.plain import PlainAnswer, plain_answer
from ragloom.engine.services import SearchServices, search_services
from ragloom.engine.steps import search_flow
from ragloom.errors import ReadInterrupted
from ragloom.llm import LLM
from ragloom.rerank.base import Reranker
from ragloom.retrieval.adaptive import one_leg
from ragloom.retrieval.pipeline import LEXICAL
from ragloom.retrieval.ranking import Ranking
from ragloom.retrieval.search_options import SearchOptions
from ragloom.store.base import Snapshot, Store
from ragloom.timing import StageTimer
from ragloom.types import Hit, MultiSearchResult, SearchGroup, SearchResult

READ_ATTEMPTS = 3  # a read that lost its connection (see `Searcher.read`) runs again
T = TypeVar("T")
Requests = Sequence[tuple[str, "str | None", SearchOptions]]  # (collection, label, options)
Sections = Sequence[tuple["str | None", Sequence[Hit]]]  # (label, hits) of a context block


class Searcher:
    """Searches a store with the engine's models (and the services of the search steps)."""

    def __init__(self, store: Store, models: Embedders, services: SearchServices | None = None):
        self.store = store
        self.models = models
        self.services = services

    def read(self, work: Callable[[Snapshot], T]) -> T:
        """`work(snapshot)` in one snapshot; run once more in a fresh snapshot if the store
        lost its connection midway (a replica went away: the retry reads elsewhere)."""
        for attempt in range(READ_ATTEMPTS):
            try:
                with self.store.snapshot() as snap:
                    return work(snap)
            except ReadInterrupted:
                if attempt == READ_ATTEMPTS - 1:
                    raise
        raise AssertionError("unreachable")

    # -- one collection ---------------------------------------------------------------
    def search(self, query: str, options: SearchOptions, collection: str) -> SearchResult:
        return self.read(
            lambda snap: self.search_in(snap, query, options, collection, QueryVectors(self.models))
        )

    def rank(self, query: str, options: SearchOptions, collection: str) -> Ranking:
        """The ranked candidates (row ids with provenance) of one collection: the search's
        route without fetching chunk text."""

        def ranked(snap: Snapshot) -> Ranking:
            vectors = QueryVectors(self.models)
            legs, answer = self.open_in(snap, query, options, collection, vectors)
            if answer is not None:  # a plain query's top k: one leg's candidates as they are
                top = (np.asarray(answer.rows, np.int64), answer.bm25)
                candidates = one_leg(LEXICAL, top, answer.ceiling)
                return Ranking(candidates, LEXICAL, options=legs.options)  # type: ignore[union-attr]
            legs, llm, reranker = self.flow_legs(snap, options, collection, vectors, legs)
            flow = search_flow(query, legs, options, self.services, llm, reranker)
            found = (flow.candidates, flow.mode, flow.degraded, flow.reason, flow.floor)
            return Ranking(*found, flow.below_floor, flow.options)

        return self.read(ranked)

    def rows(
        self, query: str, options: SearchOptions, collection: str
    ) -> tuple[np.ndarray, np.ndarray]:
        """`rank`'s candidates as arrays: chunk row ids and their scores."""
        candidates = self.rank(query, options, collection).candidates
        rows = np.array([c.row_id for c in candidates], np.int64)
        return rows, np.array([c.score for c in candidates], np.float64)

    def search_in(
        self,
        snap: Snapshot,
        query: str,
        options: SearchOptions,
        collection: str,
        vectors: QueryVectors,
    ) -> SearchResult:
        """Search one collection inside an open snapshot (timed stage by stage): a plain
        lexical query from its leg straight to its hits (`ragloom.engine.plain`), any other
        through the steps its options switch on."""
        timer = StageTimer()  # per-stage timings (ragloom.timing): the stages mark themselves
        with timer.running():
            legs, answer = self.open_in(snap, query, options, collection, vectors)
            if answer is not None:
                result = SearchResult(plain_hits(snap, answer, collection), LEXICAL)
            else:
                legs, llm, reranker = self.flow_legs(snap, options, collection, vectors, legs)
                flow = search_flow(query, legs, options, self.services, llm, reranker)
                hits, total = hits_of(snap, query, collection, flow.candidates, flow.options)
                found = (flow.mode, flow.degraded, flow.reason, flow.steps, total)
                result = SearchResult(hits, *found)
                result.dense_floor, result.below_floor = flow.floor, flow.below_floor
        result.timings = timer.to_dict()
        return result

    def open_in(
        self, snap: Snapshot, query: str, options: SearchOptions, name: str, vectors: QueryVectors
    ) -> tuple[Legs | None, PlainAnswer | None]:
        """The collection's legs in the snapshot and, for a plain lexical query, its answer
        (`ragloom.engine.plain`); (None, None) for a search with steps that need a service,
        whose services are found first (`flow_legs`), and for the default collection of a new
        index."""
        if options.uses_services:
            return None, None
        legs = open_legs(snap, options, name, vectors, self.models, self.store.location)
        return legs, None if legs is None else plain_answer(legs, query)

    def flow_legs(
        self,
        snap: Snapshot,
        options: SearchOptions,
        name: str,
        vectors: QueryVectors,
        legs: Legs | None = None,
    ) -> tuple[Legs | None, LLM | None, Reranker | None]:
        """What the steps run on: the legs (`legs`, when open already; None for the default
        collection of a new index) and the services of the steps the options switch on,
        found first."""
        llm, reranker = (
            search_services(self.services, options) if options.uses_services else (None, None)
        )
        if legs is None:
            legs = open_legs(snap, options, name, vectors, self.models, self.store.location)
        return legs, llm, reranker

    # -- several collections ----------------------------------------------------------
    def search_many(self, query: str, requests: Requests) -> MultiSearchResult:
        """Search several collections in one snapshot: (collection, label, options) each."""
        return self.read(
            lambda snap: self.search_many_in(snap, query, requests, QueryVectors(self.models))
        )

    def search_many_in(
        self, snap: Snapshot, query: str, requests: Requests, vectors: QueryVectors
    ) -> MultiSearchResult:
        """Groups in request order; `merged` interleaves them by reciprocal rank (scores of
        different collections do not compare)."""
        groups = [
            SearchGroup(name, label, self.search_in(snap, query, options, name, vectors))
            for name, label, options in requests
        ]
        order = sorted(
            ((hit.rank, g, hit) for g, group in enumerate(groups) for hit in group.hits),
            key=lambda item: (item[0], item[1]),
        )
        return MultiSearchResult(groups, [hit for _, _, hit in order])

    # -- context ----------------------------------------------------------------------
    def context(
        self,
        query: str,
        requests: Requests,
        budget: int | None,
        instruction: str | None = GROUNDING_INSTRUCTION,
        grouped: bool = False,
    ) -> PackedContext:
        """Search, then pack the hits (one labelled section per request when `grouped`)."""

        def work(snap: Snapshot) -> PackedContext:
            vectors = QueryVectors(self.models)
            if grouped:
                result = self.search_many_in(snap, query, requests, vectors)
                sections = [(g.label, list(g.hits)) for g in result.groups]
            else:
                name, _, options = requests[0]
                sections = [(None, list(self.search_in(snap, query, options, name, vectors)))]
            return self.pack_in(snap, sections, budget, instruction)

        return self.read(work)

    @staticmethod
    def pack_in(
        snap: Snapshot,
        sections: Sections,
        budget: int | None,
        instruction: str | None,
    ) -> PackedContext:
        """Pack hits into a context block, their documents' text read from the snapshot."""
        texts: dict[tuple[str, str], str] = {}

        def document_text(collection: str, doc_id: str) -> str:
            key = (collection, doc_id)
            if key not in texts:
                texts[key] = snap.document_text(collection, doc_id)
            return texts[key]

        return pack_context(sections, document_text, budget, instruction)
