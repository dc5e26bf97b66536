"""The engine's side of the service steps (expansion, rerank, multi-hop): the index's LLM
and reranker, the PRF lexical leg, and the glue from a snapshot to `ragloom.retrieval.flow`.

Kept apart from `ragloom.engine.searching` so that the Searcher holds two small hooks: its
lexical leg calls `prf_leg` when PRF is on, and `search_in` calls `search_with_steps` when
any step is on.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import numpy as np

from ragloom.config import CollectionConfig
from ragloom.expansion.rm3 import prf_search
from ragloom.lexical import BM25Params
from ragloom.llm import LLM, resolve_llm
from ragloom.models import SearchResult
from ragloom.rerank import Reranker, resolve_reranker
from ragloom.retrieval.flow import Backend, search_flow
from ragloom.retrieval.search import SearchOptions, fuse_legs, refine
from ragloom.store.base import CollectionReader, Snapshot
from ragloom.text import Tokenizer
from ragloom.timing import timed

if TYPE_CHECKING:
    from ragloom.engine.models import QueryVectors
    from ragloom.engine.searching import Searcher

_UNSET = object()


class SearchServices:
    """An index's LLM and reranker, each built from its spec on first use (never called
    unless a search switches on a step that needs it), plus the threads that search query
    variants side by side."""

    def __init__(self, llm: Any = None, reranker: Any = None) -> None:
        if llm is not None and not isinstance(llm, str):
            resolve_llm(llm)  # check the object now
        self._llm_spec, self.reranker_spec = llm, reranker
        self._llm: Any = _UNSET
        self._reranker: Any = _UNSET
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._by_spec: dict[tuple[str, int], Reranker | None] = {}

    @property
    def llm(self) -> LLM | None:
        with self._lock:
            if self._llm is _UNSET:
                self._llm = resolve_llm(self._llm_spec)
            return self._llm

    def reranker(self, llm: LLM | None = None) -> Reranker | None:
        """The index's reranker (an `llm` spec uses `llm`, else the index's LLM)."""
        spec = self.reranker_spec
        if isinstance(spec, str) and spec.startswith("llm") and llm is not None:
            return resolve_reranker(spec, llm)
        llm = llm or (self.llm if isinstance(spec, str) and spec.startswith("llm") else None)
        with self._lock:
            if self._reranker is _UNSET:
                self._reranker = resolve_reranker(spec, llm)
            return self._reranker

    def reranker_for(self, spec: Any, llm: LLM | None) -> Reranker | None:
        """A search's own reranker: objects as given, specs built once and kept (a
        cross-encoder loads its model once)."""
        if not isinstance(spec, str):
            return resolve_reranker(spec, llm)
        key = (spec, id(llm) if spec.startswith("llm") else 0)
        with self._lock:
            if key not in self._by_spec:
                if len(self._by_spec) >= 8:
                    self._by_spec.clear()
                self._by_spec[key] = resolve_reranker(spec, llm)
            return self._by_spec[key]

    def map(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
        """`fn` over items on up to 4 threads (its own pool: a search_many worker may call)."""
        if len(items) <= 1:
            return [fn(item) for item in items]
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(4, thread_name_prefix="ragloom-variants")
            pool = self._pool
        return list(pool.map(fn, items))

    def close(self) -> None:
        with self._lock:
            if self._pool is not None:
                self._pool.shutdown(wait=True)
                self._pool = None


def prf_leg(
    snap: Snapshot,
    reader: CollectionReader,
    tokenizer: Tokenizer,
    config: CollectionConfig,
    terms: list[str],
    depth: int,
    bm25: BM25Params,
    options: SearchOptions,
) -> tuple[np.ndarray, np.ndarray]:
    """The lexical leg with RM3 pseudo-relevance feedback (`options.prf`): the feedback
    chunks' index terms are their text's terms plus the title's, weighted as at ingest."""
    node, key = options.filter_node, options.filter_key

    def feedback_terms(rows: list[int]) -> list[dict[str, float]]:
        chunks = snap.chunks(rows)
        out = []
        for row in rows:
            chunk = chunks[row]
            words = tokenizer.terms(chunk.text)
            if chunk.title:
                words += tokenizer.terms(chunk.title) * config.title_weight
            out.append(dict(Counter(words)))
        return out

    rows, scores, _ = prf_search(
        terms,
        depth,
        lambda words, n: reader.lexical(words, n, bm25, node, key),
        lambda words, weights, n: reader.lexical_weighted(words, weights, n, bm25, node, key),
        feedback_terms,
        reader.document_frequencies,
        options.prf,
    )
    return rows, scores


def _services(searcher: Searcher, options: SearchOptions) -> tuple[LLM | None, Reranker | None]:
    """The search's LLM and reranker: its own (options.llm / options.reranker) or the index's."""
    services = searcher.services or SearchServices()
    llm = resolve_llm(options.llm) if options.llm is not None else None
    needs_llm = options.expand == "llm" or options.hops > 1
    reranker_spec = options.reranker
    llm_reranker = _is_llm_spec(reranker_spec) or (
        reranker_spec is None and _is_llm_spec(services.reranker_spec)
    )
    if llm is None and (needs_llm or (options.rerank and llm_reranker)):
        llm = services.llm
    ranker = None
    if options.rerank:
        if reranker_spec is None:
            ranker = services.reranker(llm)
        else:
            ranker = services.reranker_for(reranker_spec, llm)
    return llm, ranker


def _is_llm_spec(spec: Any) -> bool:
    return isinstance(spec, str) and spec.startswith("llm")


def search_with_steps(
    searcher: Searcher,
    snap: Snapshot,
    query: str,
    options: SearchOptions,
    collection: str,
    vectors: QueryVectors,
) -> SearchResult:
    """`Searcher.search_in` when expansion, rerank or hops are on (one snapshot)."""
    llm, ranker = _services(searcher, options)
    legs = searcher.legs_in(snap, query, options, collection, vectors)
    if legs is None:
        return SearchResult([], options.mode or "lexical")
    options = legs.options  # with the collection's defaults

    def prime(texts: list[str]) -> None:
        if legs.embedder is not None and options.mode != "lexical":
            with timed("embed"):
                searcher.models.remember_queries(legs.embedder, texts)

    services = searcher.services or SearchServices()
    backend = Backend(
        fuse=lambda text, opts: searcher.note_pending(
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
