"""`Searcher.search_in` when expansion, rerank or hops are on: the glue from a snapshot to
`ragloom.retrieval.flow`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragloom.engine.legs import collection_legs, note_pending
from ragloom.engine.services import SearchServices, search_services
from ragloom.models import SearchResult
from ragloom.retrieval.flow import Backend, search_flow
from ragloom.retrieval.search import SearchOptions, fuse_legs, refine
from ragloom.store.base import Snapshot
from ragloom.timing import timed

if TYPE_CHECKING:
    from ragloom.engine.models import QueryVectors
    from ragloom.engine.searching import Searcher


def search_with_steps(
    searcher: Searcher,
    snap: Snapshot,
    query: str,
    options: SearchOptions,
    collection: str,
    vectors: QueryVectors,
) -> SearchResult:
    """`Searcher.search_in` when expansion, rerank or hops are on (one snapshot)."""
    llm, ranker = search_services(searcher.services, options)
    legs = collection_legs(
        snap, query, options, collection, vectors, searcher.models, searcher.store.location
    )
    if legs is None:
        return SearchResult([], options.mode or "lexical")
    options = legs.options  # with the collection's defaults

    def prime(texts: list[str]) -> None:
        if legs.embedder is not None and options.mode != "lexical":
            with timed("embed"):
                searcher.models.remember_queries(legs.embedder, texts)

    services = searcher.services or SearchServices()
    backend = Backend(
        fuse=lambda text, opts: note_pending(
            fuse_legs(text, opts, legs.lexical, legs.dense, legs.metadata_of, legs.dense_floor),
            legs.reader,
        ),
        refine=lambda cands, opts: refine(cands, opts, legs.metadata_of, legs.vectors_of),
        chunks=snap.chunks,
        prime=prime,
        map=services.map,
    )
    flow = search_flow(query, options, backend, llm, ranker)
    hits, total = searcher.hits_in(snap, query, collection, flow.candidates, options)
    steps = {
        name: value
        for name, value in (
            ("expansion", flow.expansion),
            ("rerank", flow.rerank),
            ("hops", flow.hops),
        )
        if value is not None
    }
    reason = "; ".join(flow.reasons) or None
    result = SearchResult(hits, flow.mode, flow.degraded, reason, steps, total)
    if flow.mode == "hybrid":  # the floor the fused legs had to reach (counts stay per variant)
        floor = options.min_dense_similarity
        result.dense_floor = legs.dense_floor if floor is None else floor
    return result
