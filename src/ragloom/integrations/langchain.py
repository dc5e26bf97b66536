"""A LangChain retriever over ragloom: `RagloomRetriever(source=index_or_client, k=4)`.

LangChain's conventions: the number of hits is `k`, in the constructor and per call
(`retriever.invoke(query, k=1)`, `await retriever.ainvoke(query, k=1)`); `top_k` is
accepted too. Other search options (mode, filters, boosts, ...) go in `search_options` or
per call under their library names; an unknown field, in the constructor or per call, is an
error rather than silently dropped. `ainvoke` over the HTTP client is natively async.

Returns LangChain `Document`s whose `page_content` is the chunk's text, `id` its chunk id,
and `metadata` the chunk's metadata plus ragloom's score, rank, match, chunk and document
ids, character offsets, source, title and collection. Needs `ragloom[langchain]`.
"""

from __future__ import annotations

from typing import Any

from ragloom.contract.options import DEFAULT_TOP_K, OPTIONS
from ragloom.integrations import (
    aretrieve,
    check_size,
    check_source,
    hit_metadata,
    missing,
    retrieve,
    search_options,
)
from ragloom.types import Hit

try:
    from langchain_core.callbacks import (
        AsyncCallbackManagerForRetrieverRun,
        CallbackManagerForRetrieverRun,
    )
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise missing("langchain-core", "langchain", exc) from None
from pydantic import AliasChoices, ConfigDict, Field, field_validator

SIZE_NAMES = ("k", "top_k")


class RagloomRetriever(BaseRetriever):
    """Search a ragloom `Index` (in process) or `Client` (HTTP sidecar) from LangChain.

    `collection` None searches the source's default collection; `search_options` are
    passed to every search (mode, fusion, weights, filters, boosts, ...).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    source: Any
    collection: str | None = None
    k: int = Field(
        default=DEFAULT_TOP_K,
        validation_alias=AliasChoices("k", "top_k"),
        description=OPTIONS["top_k"].description,
    )
    search_options: dict[str, Any] = Field(default_factory=dict)

    @field_validator("source")
    @classmethod
    def _searchable(cls, value: Any) -> Any:
        return check_source(value)

    @field_validator("k", mode="before")
    @classmethod
    def _size(cls, value: Any) -> int:
        return check_size(value)

    @field_validator("search_options")
    @classmethod
    def _options(cls, value: dict[str, Any]) -> dict[str, Any]:
        return search_options({}, value, ())[1]

    @property
    def top_k(self) -> int:
        """`k` under ragloom's name."""
        return self.k

    def _call(self, kwargs: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        size, options = search_options(self.search_options, kwargs, SIZE_NAMES)
        return (self.k if size is None else check_size(size)), options

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        size, options = self._call(kwargs)
        return _documents(retrieve(self.source, query, size, self.collection, options))

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        size, options = self._call(kwargs)
        return _documents(await aretrieve(self.source, query, size, self.collection, options))


def _documents(hits: list[Hit]) -> list[Document]:
    return [
        Document(page_content=hit.text, metadata=hit_metadata(hit), id=hit.chunk_id) for hit in hits
    ]
