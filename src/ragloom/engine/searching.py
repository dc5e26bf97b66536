"""The read path: one snapshot per search; legs, fusion and controls; hits from that snapshot.

Everything one search returns (ranking, chunk text, metadata, vectors, packed document text)
comes from one committed version of the index, so a document being replaced is found old or
new, never neither, never a mix. Several collections searched together share one snapshot
and one embedding of the query per model.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ragloom.config import CollectionConfig
from ragloom.context import GROUNDING_INSTRUCTION, PackedContext, count_tokens, pack_context
from ragloom.engine.legs import Legs, collection_legs, note_pending
from ragloom.engine.models import Models, QueryVectors
from ragloom.errors import InputError, NotFound, ReadInterrupted
from ragloom.lexical import BM25Params
from ragloom.models import Hit, MultiSearchResult, SearchGroup, SearchResult
from ragloom.retrieval import pipeline
from ragloom.retrieval.search import Ranking, SearchOptions, rank
from ragloom.store.base import Snapshot, Store
from ragloom.text import Tokenizer, analyzer_for
from ragloom.timing import StageTimer, timed

READ_ATTEMPTS = 3  # a read that lost its connection (see `Searcher.read`) runs again


def _check_query(query: Any) -> str:
    if not isinstance(query, str):
        raise InputError(f"query must be a string, got {type(query).__name__}")
    return query


class Searcher:
    """Searches a store with the engine's models."""

    def __init__(self, store: Store, models: Models, services: Any = None) -> None:
        self.store = store
        self.models = models
        # The LLM and reranker of the service steps (`ragloom.engine.services`).
        self.services = services

    @staticmethod
    def tokenizer(config: CollectionConfig) -> Tokenizer:
        return analyzer_for(config.tokenizer)

    def read(self, work: Callable[[Snapshot], Any]) -> Any:
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
        _check_query(query)
        return self.read(
            lambda snap: self.search_in(snap, query, options, collection, QueryVectors(self.models))
        )

    def search_in(
        self,
        snap: Snapshot,
        query: str,
        options: SearchOptions,
        collection: str,
        vectors: QueryVectors,
    ) -> SearchResult:
        """Search one collection inside an open snapshot (timed stage by stage)."""
        timer = StageTimer()  # per-stage timings (ragloom.timing): the stages mark themselves
        with timer.running():
            if options.uses_services:  # expansion, rerank, multi-hop: ragloom.engine.steps
                from ragloom.engine.steps import search_with_steps

                result = search_with_steps(self, snap, query, options, collection, vectors)
            else:
                ranking = self.rank_in(snap, query, options, collection, vectors)
                options = ranking.options or options
                hits, total = self.hits_in(snap, query, collection, ranking.candidates, options)
                result = SearchResult(
                    hits, ranking.mode, ranking.degraded, ranking.reason, None, total
                )
                result.dense_floor, result.below_floor = ranking.floor, ranking.below_floor
        result.timings = timer.to_dict()
        return result

    def hits_in(
        self,
        snap: Snapshot,
        query: str,
        collection: str,
        candidates: Sequence[Any],
        options: SearchOptions,
    ) -> tuple[list[Hit], int | None]:
        """Hits of ranked candidates from the snapshot, with the query's matched terms when
        explained, and token counts with their total when asked."""
        with timed("hydrate"):
            rows = [c.row_id for c in candidates]
            chunks = snap.chunks(rows)
            missing = [r for r in rows if r not in chunks]
            if missing:  # cannot happen within one snapshot; fail loudly, never drop hits
                raise RuntimeError(f"snapshot inconsistency: rows {missing[:5]} vanished")
            hits = pipeline.hydrate(candidates, chunks, options if options.explain else None)
            if options.explain and hits:
                config = snap.collection(collection).config
                pipeline.explain_matches(hits, self.tokenizer(config), query)
            if not options.with_tokens:
                return hits, None
            for hit in hits:
                hit.tokens = count_tokens(hit.text)
            return hits, sum(hit.tokens or 0 for hit in hits)

    def rank(self, query: str, options: SearchOptions, collection: str) -> Ranking:
        _check_query(query)
        return self.read(
            lambda snap: self.rank_in(snap, query, options, collection, QueryVectors(self.models))
        )

    def rank_in(
        self,
        snap: Snapshot,
        query: str,
        options: SearchOptions,
        collection: str,
        vectors: QueryVectors,
    ) -> Ranking:
        """The ranked candidates (row ids with provenance) of one collection."""
        legs = self.legs_in(snap, query, options, collection, vectors)
        if legs is None:  # a new, empty index answers with no hits
            return Ranking([], options.mode or "lexical")
        ranking = rank(
            query,
            legs.options,
            legs.lexical,
            legs.dense,
            legs.metadata_of,
            legs.vectors_of,
            legs.dense_floor,
        )
        ranking.options = legs.options
        return note_pending(ranking, legs.reader)

    def legs_in(
        self,
        snap: Snapshot,
        query: str,
        options: SearchOptions,
        collection: str,
        vectors: QueryVectors,
    ) -> Legs | None:
        """A collection's legs and lookups for `rank` (see `ragloom.engine.legs`)."""
        return collection_legs(
            snap, query, options, collection, vectors, self.models, self.store.location
        )

    def lexical_rows(
        self, query: str, k: int, collection: str, bm25: BM25Params | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """The lexical leg alone (row ids, BM25 scores): what a BM25 benchmark measures."""
        _check_query(query)
        with self.store.snapshot() as snap:
            if collection not in snap.collections():
                raise NotFound(f"no collection {collection!r} in {self.store.location}")
            reader = snap.collection(collection)
            terms = self.tokenizer(reader.config).terms(query)
            return reader.lexical(terms, k, bm25 or reader.config.bm25)

    # -- several collections ----------------------------------------------------------
    def search_many(
        self,
        query: str,
        requests: Sequence[tuple[str, str | None, SearchOptions]],
    ) -> MultiSearchResult:
        """Search several collections in one snapshot: (collection, label, options) each.

        Groups come back in request order; `merged` interleaves them by reciprocal rank
        (scores of different collections do not compare)."""
        _check_query(query)
        return self.read(
            lambda snap: self.search_many_in(snap, query, requests, QueryVectors(self.models))
        )

    def search_many_in(self, snap, query, requests, vectors) -> MultiSearchResult:
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
        requests: Sequence[tuple[str, str | None, SearchOptions]],
        budget: int | None,
        instruction: str | None = GROUNDING_INSTRUCTION,
        grouped: bool = False,
    ) -> PackedContext:
        """Search, then pack the hits (one labelled section per request when `grouped`)."""
        _check_query(query)
        with self.store.snapshot() as snap:
            vectors = QueryVectors(self.models)
            if grouped:
                result = self.search_many_in(snap, query, requests, vectors)
                sections = [(g.label, list(g.hits)) for g in result.groups]
            else:
                name, _, options = requests[0]
                sections = [(None, list(self.search_in(snap, query, options, name, vectors)))]
            return self.pack_in(snap, sections, budget, instruction)

    @staticmethod
    def pack_in(
        snap: Snapshot,
        sections: Sequence[tuple[str | None, Sequence[Hit]]],
        budget: int | None,
        instruction: str | None,
    ) -> PackedContext:
        texts: dict[tuple[str, str], str] = {}

        def document_text(collection: str, doc_id: str) -> str:
            key = (collection, doc_id)
            if key not in texts:
                texts[key] = snap.document_text(collection, doc_id)
            return texts[key]

        return pack_context(sections, document_text, budget, instruction)


class Reading:
    """Several reads (searches, packing, document text) from one snapshot: a request that
    returns both hits and a context block shows one version of the index."""

    def __init__(self, searcher: Searcher, snap: Snapshot) -> None:
        self.searcher = searcher
        self.snapshot = snap
        self.vectors = QueryVectors(searcher.models)

    def search(self, query: str, options: SearchOptions, collection: str) -> SearchResult:
        _check_query(query)
        return self.searcher.search_in(self.snapshot, query, options, collection, self.vectors)

    def search_many(
        self, query: str, requests: Sequence[tuple[str, str | None, SearchOptions]]
    ) -> MultiSearchResult:
        _check_query(query)
        return self.searcher.search_many_in(self.snapshot, query, requests, self.vectors)

    def pack(
        self,
        sections: Sequence[tuple[str | None, Sequence[Hit]]],
        budget: int | None = None,
        instruction: str | None = GROUNDING_INSTRUCTION,
    ) -> PackedContext:
        return self.searcher.pack_in(self.snapshot, sections, budget, instruction)

    def document_text(self, collection: str, doc_id: str) -> str:
        return self.snapshot.document_text(collection, doc_id)
