"""Collections' settings and counts: creating or changing a collection's configuration, and
the statistics of every collection, each read from one version of the index."""

from __future__ import annotations

import threading
from contextlib import suppress
from typing import Any

from ragloom.config import CollectionConfig
from ragloom.dense import dots, topn
from ragloom.engine.documents import check_collection_name
from ragloom.engine.embedders import Embedders
from ragloom.engine.ingest import Ingest
from ragloom.errors import InputError, ModelUnavailable
from ragloom.lexical import bm25_search, kernels
from ragloom.lexical.bm25 import BM25Params
from ragloom.retrieval.search_options import SearchOptions
from ragloom.segments.view import CollectionView
from ragloom.store.base import Store
from ragloom.store.records import StoredDocument


def configure(ingest: Ingest, collection: str, changes: dict[str, Any]) -> CollectionConfig:
    """Create a collection with settings, or change chunking/BM25 settings of an existing one.

    The tokenizer of a non-empty collection cannot change (its postings would not match).
    """
    store = ingest.store
    check_collection_name(collection)
    base = CollectionConfig()
    unknown = set(changes) - set(base.to_dict()) - {"embedding"}
    if unknown:
        raise InputError(
            f"unknown collection setting(s): {', '.join(sorted(unknown))}",
            f"known: {', '.join(sorted(base.to_dict()))}",
        )
    known = store.collections().get(collection)
    if known is not None:
        base = CollectionConfig.from_dict(known.config)
    given = {k: v for k, v in changes.items() if v is not None}
    if not given.get("fusion_profile", True):  # {} is no profile to set: keep the one taken
        given.pop("fusion_profile")
    merged = {**base.to_dict(), **given}
    for key in ("chunking", "tokenizer", "bm25", "code_chunking"):
        value = merged[key]
        if not isinstance(value, dict):
            merged[key] = value.to_dict() if hasattr(value, "to_dict") else vars(value)
    config = CollectionConfig.from_dict(merged)
    SearchOptions(**config.search)  # the defaults together, as a search takes them
    if known is None:
        info = ingest.collection(collection, config)
        return CollectionConfig.from_dict(info.config)
    config = CollectionConfig.from_dict({**config.to_dict(), "embedding": base.embedding})
    if config != base:
        with store.snapshot() as snap:
            size = snap.collection(collection).size()
        if config.tokenizer != base.tokenizer and size:
            raise InputError(
                f"collection {collection!r} already holds documents analysed with "
                f"{base.tokenizer}; the tokenizer cannot change",
                "index into a new collection or a new index file",
            )
        with store.write() as write:
            write.set_config(known, config.to_dict())
    return config


def index_stats(store: Store, path: Any) -> dict[str, Any]:
    """Counts per collection (documents, chunks, vectors, pending) plus lexical statistics."""
    out: dict[str, Any] = {"path": str(path), "collections": {}}
    with store.snapshot() as snap:
        for name in sorted(snap.collections()):
            reader = snap.collection(name)
            config = CollectionConfig.from_dict(reader.info.config)
            out["collections"][name] = {
                **reader.counts(),
                "embedding": config.embedding,
                "config": config.to_dict(),
            }
    groups = out["collections"].values()
    out["documents"] = sum(c["documents"] for c in groups)
    out["chunks"] = sum(c["chunks"] for c in groups)
    out["pending"] = sum(c["pending"] for c in groups)
    out["read_only"] = store.read_only
    servers = store.replication()
    if servers is not None:
        out["replicas"] = servers
    shards = store.shard_status()
    if shards is not None:
        out["shards"] = shards
    return out


def warm(store: Store, models: Embedders, wait: bool = False) -> None:
    """Load the compiled kernels, and every collection's segments, search graphs and model,
    now, while a thread of its own builds the most common terms' weights (`wait`: joined).
    A model that cannot be loaded here (one given to another process's library, a
    mismatch) is left for the searches that need it to report: lexical searches do not."""
    kernels.available()  # (the builder's weighing kernel first)
    builder = None
    with store.snapshot() as snap:
        readers = {name: snap.collection(name) for name in snap.collections()}
        # The builder reads the views' segments only, never the store: closing the index
        # meanwhile takes nothing from under it.
        wanted = [
            (view, r.config.bm25)
            for r in readers.values()
            if (view := r.segments_view()) is not None
        ]
        if wanted:
            builder = threading.Thread(
                target=_warm_terms, args=(wanted,), name="ragloom-warm-terms", daemon=True
            )
            builder.start()
        dots.compiled()
        topn.compiled()
        for name, reader in readers.items():
            reader.prepare_dense()
            with suppress(InputError, ModelUnavailable):
                models.for_collection(name, reader.info.config.get("embedding"), reader.size() > 0)
    if wait and builder is not None:
        builder.join()


def _warm_terms(views: list[tuple[CollectionView, BM25Params]]) -> None:
    """Each view's most common terms' weights (`bm25_search.warm_view`), off the caller's
    thread: the first searches after open find them built (or build them themselves)."""
    for view, params in views:
        bm25_search.warm_view(view, params)


def pending_vectors(store: Store) -> int:
    """Chunks waiting for vectors, over every collection."""
    with store.snapshot() as snap:
        return sum(snap.collection(name).pending() for name in snap.collections())


def documents_page(
    store: Store, collection: str | None, offset: int, limit: int
) -> list[StoredDocument]:
    """A page of stored documents (`offset` and `limit` checked: integers from 0)."""
    for name, value in (("offset", offset), ("limit", limit)):
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**63:
            raise InputError(f"{name} must be a non-negative integer below 2**63")
    with store.snapshot() as snap:
        return snap.documents(collection, offset, limit)
