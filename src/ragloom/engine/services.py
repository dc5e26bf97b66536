"""The services a search's steps need (expansion, rerank, multi-hop): an index's LLM and
reranker, built from their specs on first use, and the threads that search query variants
side by side. Nothing is built or called unless a search switches on a step that needs it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ragloom.llm import LLM, resolve_llm
from ragloom.rerank import Reranker, resolve_reranker
from ragloom.retrieval.search_options import SearchOptions

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


def search_services(
    services: SearchServices | None, options: SearchOptions
) -> tuple[LLM | None, Reranker | None]:
    """The search's LLM and reranker: its own (options.llm / options.reranker) or the index's."""
    services = services or SearchServices()
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
