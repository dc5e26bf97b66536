"""One write batch, stage by stage: the collection, whether each document changed, the
chunks and terms of those that did, their vectors, then one store transaction. Each stage is
a function of data in a module of its own; this one runs them in order, so a batch's route
through the code reads top to bottom."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ragloom.chunking import ChunkPolicy
from ragloom.config import CollectionConfig
from ragloom.engine.chunks import chunked
from ragloom.engine.documents import CheckedBatch
from ragloom.engine.embedders import Embedders, embedding_config
from ragloom.engine.fingerprint import content_hash
from ragloom.engine.report import IndexReport
from ragloom.engine.vectors import VectorPlan, batch_vectors
from ragloom.enrich import Enricher, enrichers_fingerprint
from ragloom.store.base import Store
from ragloom.store.records import CollectionInfo, NewChunk, NewDocument
from ragloom.text import analyzer_for


def collection_for_write(
    store: Store, models: Embedders, name: str, config: CollectionConfig | None = None
) -> CollectionInfo:
    """Collection `name` (a checked name), created with `config` (default: the defaults) and
    the default model if it does not exist yet."""
    known = store.collections().get(name)
    if known is not None:
        return known
    raw = (config or CollectionConfig()).to_dict()
    embedder = models.for_new_collection()
    if embedder is not None and not raw.get("embedding"):
        raw["embedding"] = embedding_config(embedder)
    with store.write() as write:
        return write.ensure_collection(name, raw)


def write_batch(
    store: Store,
    models: Embedders,
    name: str,
    batch: CheckedBatch,
    enrichers: Sequence[Enricher],
    plan: VectorPlan,
    report: IndexReport,
) -> None:
    """Write one batch of checked documents into collection `name`: unchanged documents
    (same content hash) are counted and left alone; the others replace their stored
    versions in one transaction. What happened is added to `report`."""
    info = collection_for_write(store, models, name)
    config = CollectionConfig.from_dict(info.config)
    latest = {d.id: d for d, _ in batch}  # the last version of an id wins
    metadata = {d.id: m for d, m in batch}
    policy_of: dict[tuple[str | None, str | None], ChunkPolicy] = {}
    policies: dict[str, ChunkPolicy] = {}
    for doc_id, d in latest.items():  # records share a policy: look each kind up once
        key = (d.source, d.language)
        if key not in policy_of:
            policy_of[key] = config.policy_for(d.source, d.language)
        policies[doc_id] = policy_of[key]
    salt = enrichers_fingerprint(enrichers)
    hashes = {
        doc_id: content_hash(d, metadata[doc_id], policies[doc_id], config.title_weight, salt)
        for doc_id, d in latest.items()
    }
    with store.snapshot() as snap:
        stored = snap.content_hashes(name, list(latest))
        has_chunks = snap.collection(name).size() > 0
        unchanged = [doc_id for doc_id in latest if stored.get(doc_id) == hashes[doc_id]]
        if unchanged:  # their chunks still count: re-indexing a file reports what it holds
            report.unchanged_chunks += sum(snap.chunk_counts(name, unchanged).values())
    report.unchanged += len(unchanged)
    kept = set(unchanged)
    changed = [d for doc_id, d in latest.items() if doc_id not in kept]
    if not changed:
        return
    embedder, gained = models.for_write(name, info.config, has_chunks)
    tokenizer = analyzer_for(config.tokenizer)
    chunks = chunked(changed, policies, enrichers, tokenizer, config.title_weight)
    report.fragments += chunks.fragments
    vectors = batch_vectors(store, info, embedder, chunks.prepared, plan, report)
    position = 0
    new_docs = []
    for doc, spans in chunks.prepared:
        new_chunks = []
        for n, span in enumerate(spans):
            vector: np.ndarray | None = vectors[position] if vectors is not None else None
            position += 1
            new_chunks.append(
                NewChunk(n, span.text, span.start, span.end, span.metadata, [], vector)
            )
        new_docs.append(NewDocument(doc, hashes[doc.id], new_chunks, metadata[doc.id]))
    with store.write() as write:
        if gained is not None:  # an empty lexical collection gains vectors with this write
            write.set_config(info, gained)
            info = CollectionInfo(info.id, info.name, gained)
        outcome = write.put(info, new_docs, chunks.terms)
    report.documents += outcome.documents
    report.chunks += outcome.chunks
