"""Several reads from one version of the index: what `Index.reading` and `Index.read` hand
out, so that a request returning both hits and their context block shows one version."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragloom.context import GROUNDING_INSTRUCTION as GROUNDING
from ragloom.context import PackedContext
from ragloom.contract.schema import check_query
from ragloom.engine.embedders import Embedders, QueryVectors
from ragloom.engine.keywords import collection_requests, search_options
from ragloom.engine.legs import DEFAULT_COLLECTION
from ragloom.engine.searching import Searcher, Sections
from ragloom.store.base import Snapshot
from ragloom.types import MultiSearchResult, SearchResult


class IndexReading:
    """The Index's read calls bound to one snapshot (see `Index.reading` and `Index.read`):
    a request that returns both hits and a context block shows one version of the index."""

    def __init__(self, searcher: Searcher, models: Embedders, snap: Snapshot) -> None:
        self._searcher = searcher
        self.snapshot = snap
        self._vectors = QueryVectors(models)  # the query embedded once per model

    def search(
        self, query: str, top_k: int = 5, collection: str = DEFAULT_COLLECTION, **options: Any
    ) -> SearchResult:
        search = search_options(top_k, **options)
        check_query(query)
        return self._searcher.search_in(self.snapshot, query, search, collection, self._vectors)

    def search_many(
        self, query: str, requests: Sequence[dict[str, Any]], **shared: Any
    ) -> MultiSearchResult:
        wanted = collection_requests(requests, shared)
        check_query(query)
        return self._searcher.search_many_in(self.snapshot, query, wanted, self._vectors)

    def pack(
        self, sections: Sections, budget: int | None = None, instruction: str | None = GROUNDING
    ) -> PackedContext:
        return self._searcher.pack_in(self.snapshot, sections, budget, instruction)

    def document_text(self, doc_id: str, collection: str = DEFAULT_COLLECTION) -> str:
        return self.snapshot.document_text(collection, doc_id)
