"""Retrievers for LLM frameworks, over an `Index` or an HTTP `Client` (optional extras).

- `ragloom.integrations.langchain.RagloomRetriever` (`pip install 'ragloom[langchain]'`)
- `ragloom.integrations.llamaindex.RagloomRetriever` (`pip install 'ragloom[llamaindex]'`)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from ragloom.errors import InputError, MissingExtra
from ragloom.types import Hit, SearchResult


class Searchable(Protocol):
    """What a retriever searches: `ragloom.Index` or `ragloom.Client` (same call)."""

    def search(
        self, query: str, top_k: int = ..., collection: Any = ..., **options: Any
    ) -> SearchResult: ...


def check_source(source: Any) -> Searchable:
    """The index or client to search, checked once when the retriever is made."""
    if not callable(getattr(source, "search", None)):
        raise InputError(
            f"a retriever needs a ragloom.Index or ragloom.Client, got {type(source).__name__}"
        )
    return source


def retrieve(
    source: Searchable,
    query: str,
    top_k: int,
    collection: str | None,
    options: Mapping[str, Any],
) -> list[Hit]:
    """The hits of one search, as the library or the sidecar returns them."""
    if collection is None:
        return list(source.search(query, top_k, **options))
    return list(source.search(query, top_k, collection, **options))


def hit_metadata(hit: Hit) -> dict[str, Any]:
    """A hit's metadata for a framework: the chunk's own metadata, then ragloom's fields
    (score, rank, match, chunk id, document id, offsets, source, title, collection), which
    win when a name is in both."""
    return {
        **hit.metadata,
        "score": hit.score,
        "rank": hit.rank,
        "match": hit.match,
        "chunk_id": hit.chunk_id,
        "document_id": hit.document_id,
        "start": hit.start,
        "end": hit.end,
        "source": hit.source,
        "title": hit.title,
        "collection": hit.collection,
    }


def missing(package: str, extra: str, exc: ImportError) -> MissingExtra:
    return MissingExtra(
        f"{package} is not installed ({exc})", f"install it with pip install 'ragloom[{extra}]'"
    )
