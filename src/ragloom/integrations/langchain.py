"""A LangChain retriever over ragloom: `RagloomRetriever(source=index_or_client)`.

Returns LangChain `Document`s whose `page_content` is the chunk's text, `id` its chunk id,
and `metadata` the chunk's metadata plus ragloom's score, rank, match, chunk and document
ids, character offsets, source, title and collection. Needs `ragloom[langchain]`.
"""

from __future__ import annotations

from typing import Any

from ragloom.integrations import check_source, hit_metadata, missing, retrieve

try:
    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise missing("langchain-core", "langchain", exc) from None
from pydantic import ConfigDict, Field, field_validator


class RagloomRetriever(BaseRetriever):
    """Search a ragloom `Index` (in process) or `Client` (HTTP sidecar) from LangChain.

    `collection` None searches the source's default collection; `search_options` are
    passed to the search as they are (mode, fusion, weights, filters, boosts, ...).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    source: Any
    collection: str | None = None
    top_k: int = Field(default=4, ge=1)
    search_options: dict[str, Any] = Field(default_factory=dict)

    @field_validator("source")
    @classmethod
    def _searchable(cls, value: Any) -> Any:
        return check_source(value)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        hits = retrieve(self.source, query, self.top_k, self.collection, self.search_options)
        return [
            Document(page_content=hit.text, metadata=hit_metadata(hit), id=hit.chunk_id)
            for hit in hits
        ]
