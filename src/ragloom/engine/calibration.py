"""Calibration: probe a collection's own chunks to learn how far to trust each leg.

Adaptive fusion (the default, `ragloom.retrieval.adaptive`) weighs a collection's legs by
its probe profile: each leg's mean reciprocal rank at finding up to `PROBES` chunks from a
part cut from them (`ragloom.retrieval.probes`). It costs two embeddings and two searches a
probe, so `Index` profiles at once only a collection with vectors that has no profile of its
model (after its first write, after a re-embed); a profile the collection's size has since
moved away from by a fifth is refreshed once writes pause (`ragloom.engine.refresh`), by
`optimize` (`ragloom index` before it exits) or by `calibrate` — never batch by batch.
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import numpy as np

from ragloom.config import CollectionConfig
from ragloom.embedding import Embedder
from ragloom.engine.embedders import Embedders
from ragloom.errors import EmbeddingError, NotFound
from ragloom.retrieval.probes import (
    Probe,
    cut_probe,
    mean_reciprocal_ranks,
    probe_order,
    reciprocal_rank,
    rest_bm25,
)
from ragloom.store.base import CollectionReader, DenseQuery, LexicalQuery, Snapshot, Store
from ragloom.text import Tokenizer, analyzer_for

PROBES = 200  # probes per collection
MIN_PROBES = 20  # fewer usable probes than this: no profile (the legs weigh the same)
MAX_ROWS_READ = 20 * PROBES  # chunks looked at to find the probes
PROBE_DEPTH = 100  # each leg's list a probe's target is ranked in
RECALIBRATE = 0.2  # a size change (share of the profiled size) that calls for a new profile
PROFILE_VERSION = 1


PROBE_BATCH = 32  # probes embedded and searched between checks for a stop


class Stopped(Exception):
    """A profile given up midway (the index is closing); nothing was written."""


def profile_missing(config: CollectionConfig, chunks: int) -> bool:
    """True when a collection with vectors has no profile of its model at all."""
    if not config.embedding or chunks == 0:
        return False
    profile = config.fusion_profile
    if not profile or profile.get("version") != PROFILE_VERSION:
        return True
    return profile.get("model") != config.embedding.get("model")


def needs_profile(config: CollectionConfig, chunks: int) -> bool:
    """True when a collection with vectors has no profile of its model at about its size."""
    if profile_missing(config, chunks):
        return True
    if not config.embedding or chunks == 0:
        return False
    then = int(config.fusion_profile.get("chunks") or 0)
    return then == 0 or abs(chunks - then) / then >= RECALIBRATE


def _stable_keys(reader: CollectionReader) -> dict[int, str]:
    """Row -> "document id#position of the chunk in its document" (the same on every store)."""
    by_document: dict[str, list[int]] = defaultdict(list)
    for row, document in reader.chunk_documents().items():
        by_document[document].append(row)
    return {
        row: f"{document}#{i}"
        for document, rows in by_document.items()
        for i, row in enumerate(sorted(rows))
    }


def find_probes(snap: Snapshot, reader: CollectionReader, limit: int = PROBES) -> list[Probe]:
    """Up to `limit` probes from the collection's chunks, in a fixed order. A title probes
    only a document of one chunk (the chunks of a longer one share it)."""
    keys = _stable_keys(reader)
    order = probe_order(keys)[:MAX_ROWS_READ]
    several = {key.rsplit("#", 1)[0] for key in keys.values() if not key.endswith("#0")}
    probes: list[Probe] = []
    for start in range(0, len(order), limit):
        chunks = snap.chunks(order[start : start + limit])
        for row in order[start : start + limit]:
            chunk = chunks.get(row)
            if chunk is None:
                continue
            title = None if chunk.document_id in several else chunk.title
            cut = cut_probe(title, chunk.text)
            if cut is not None:
                probes.append(Probe(row, *cut))
                if len(probes) == limit:
                    return probes
    return probes


def profile_collection(
    snap: Snapshot,
    reader: CollectionReader,
    embedder: Embedder,
    tokenizer: Tokenizer,
    config: CollectionConfig,
    stop: Callable[[], bool] | None = None,
) -> dict[str, Any]:
    """The collection's probe profile (each leg's MRR, how many probes, at what size);
    `stop()` is asked between batches of probes and raises `Stopped` when it says so."""
    chunks = reader.size()
    profile: dict[str, Any] = {
        "version": PROFILE_VERSION,
        "model": (config.embedding or {}).get("model"),
        "chunks": chunks,
    }
    probes = find_probes(snap, reader, PROBES)
    profile["probes"] = len(probes)
    if len(probes) < MIN_PROBES:
        return profile
    params = config.bm25
    average = float(reader.counts()["avg_chunk_terms"]) or 1.0  # the collection's own
    lexical: list[float] = []
    dense: list[float] = []
    for start in range(0, len(probes), PROBE_BATCH):
        if stop is not None and stop():
            raise Stopped
        batch = probes[start : start + PROBE_BATCH]
        queries = embedder.embed([p.query for p in batch])
        rests = embedder.embed([p.rest for p in batch])
        for probe, query_vector, rest_vector in zip(batch, queries, rests):
            terms = tokenizer.terms(probe.query)
            rows, scores = reader.lexical(LexicalQuery(terms, params), PROBE_DEPTH)
            counts, total = reader.document_frequencies(terms)
            own = rest_bm25(terms, tokenizer.terms(probe.rest), counts, total, average, params)
            lexical.append(reciprocal_rank(own, probe.row, rows, scores))
            rows, scores = reader.dense(DenseQuery(query_vector), PROBE_DEPTH)
            own = float(np.dot(rest_vector, query_vector))
            dense.append(reciprocal_rank(own, probe.row, rows, scores))
    return {**profile, **mean_reciprocal_ranks(lexical, dense)}


Stop = Callable[[], bool] | None  # true once the work should end early


def calibrate(
    store: Store,
    models: Embedders,
    collection: str | None = None,
    force: bool = False,
    *,
    missing_only: bool = False,
    stop: Stop = None,
    quiet: bool = False,
) -> dict[str, dict[str, Any]]:
    """Profile `collection` (else every collection) when it needs it (or at all, with vectors,
    when `force`; only one with no profile, when `missing_only`), store each profile in its
    collection's config and return them by name. `stop` ends it early (`Stopped`). After a
    write (`quiet`), a failing embedding service leaves the old profile, with a warning."""
    if quiet:
        try:
            return calibrate(store, models, collection, force, missing_only=missing_only, stop=stop)
        except EmbeddingError as exc:
            warnings.warn(f"fusion profile not updated: {exc.message}", stacklevel=3)
            return {}
    names = [collection] if collection is not None else sorted(store.collections())
    profiles = {}
    for name in names:
        with store.snapshot() as snap:
            if name not in snap.collections():
                raise NotFound(f"no collection {name!r} in {store.location}")
            reader = snap.collection(name)
            config = reader.config
            due = profile_missing if missing_only else needs_profile
            if not (force or due(config, reader.size())):
                continue
            if reader.missing_shards():  # a profile of part of the collection waits
                continue
            embedder = models.for_collection(name, config.embedding, True)
            if embedder is None:
                continue
            tokenizer = analyzer_for(config.tokenizer)
            profile = profile_collection(snap, reader, embedder, tokenizer, config, stop)
        _store_profile(store, name, profile)
        profiles[name] = profile
    return profiles


def _store_profile(store: Store, name: str, profile: dict[str, Any]) -> None:
    """Set the profile in the collection's config as it is now, read in the same write: a
    setting changed while the probes ran (on another thread) is kept."""
    with store.write() as write:
        current = write.ensure_collection(name, {})  # exists: collections are never dropped
        write.set_config(current, {**current.config, "fusion_profile": profile})
