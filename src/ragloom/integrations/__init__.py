"""Retrievers for LLM frameworks, over an `Index` or an HTTP `Client` (optional extras).

- `ragloom.integrations.langchain.RagloomRetriever` (`pip install 'ragloom[langchain]'`)
- `ragloom.integrations.llamaindex.RagloomRetriever` (`pip install 'ragloom[llamaindex]'`)
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, Protocol

from ragloom.contract.options import OPTIONS, offered
from ragloom.contract.schema import check_value, integral
from ragloom.errors import InputError, InvalidRequest, MissingExtra
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


# Search options a retriever takes, by their library keywords (from `ragloom.contract`).
SEARCH_KEYWORDS = frozenset(o.keyword for o in offered("library") if o.name != "top_k")
# The fields of ragloom's bookkeeping in a hit's metadata: kept for the application, out of
# the text an LLM reads or an embedder embeds.
BOOKKEEPING = (
    "score",
    "rank",
    "match",
    "chunk_id",
    "document_id",
    "start",
    "end",
    "collection",
)


def search_options(
    base: Mapping[str, Any], call: Mapping[str, Any], size_names: tuple[str, ...]
) -> tuple[int | None, dict[str, Any]]:
    """The number of hits and the search options of one call: the retriever's own options,
    then those given to this call (`size_names` spell the number of hits, e.g. `k` and
    `top_k`). An unknown name raises `InvalidRequest` (`bad_request`) instead of being dropped."""
    size = None
    options = dict(base)
    for name, value in call.items():
        if name in size_names:
            size = value
        elif name in SEARCH_KEYWORDS:
            options[name] = value
        else:
            raise InvalidRequest(
                f"unknown search option {name!r}",
                f"use {', '.join(size_names)} or one of {', '.join(sorted(SEARCH_KEYWORDS))}",
            )
    return size, options


def check_size(value: Any) -> int:
    """The number of hits, checked against the declaration of `top_k` (2.0 taken as 2)."""
    value = integral(value)
    check_value(OPTIONS["top_k"], value, "library")
    return int(value)


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


async def aretrieve(
    source: Searchable,
    query: str,
    top_k: int,
    collection: str | None,
    options: Mapping[str, Any],
) -> list[Hit]:
    """`retrieve` without blocking the event loop: over HTTP with the client's async call
    (`Client.asearch`), in process on a worker thread."""
    asearch = getattr(source, "asearch", None)
    if asearch is not None:
        found = await asearch(query, top_k, collection, **options)
        return list(found)
    return await asyncio.to_thread(retrieve, source, query, top_k, collection, options)


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
