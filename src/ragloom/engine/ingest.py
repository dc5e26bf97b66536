"""The write path: documents -> chunks, terms and vectors -> one store transaction per batch.

Chunking, enrichment, tokenizing and embedding all happen before the transaction, so the
write lock is held only for the database work. If the embedding service fails, the batch
is still stored and lexically searchable at once; its chunks wait for vectors ("pending")
until a later call embeds them, unless the caller asked for the failure instead.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ragloom.chunking import ChunkPolicy
from ragloom.config import CollectionConfig
from ragloom.embedding import Embedder, resolve_embedder
from ragloom.engine.calibration import calibrate
from ragloom.engine.documents import (
    check_collection_name,
    check_document,
    checked_document,
    chunk_terms,
    content_hash,
    embedding_text,
)
from ragloom.engine.embedders import Embedders, embedding_config
from ragloom.engine.report import IndexReport
from ragloom.engine.stored_files import StoredFileIds, known_converted
from ragloom.enrich import Enricher, enrich_span, enrichers_fingerprint
from ragloom.errors import EmbeddingError, EmbeddingMismatch, InputError, NotFound, worded
from ragloom.store.base import Store
from ragloom.store.document_text import text_hash
from ragloom.store.records import CollectionInfo, NewChunk, NewDocument
from ragloom.text import analyzer_for
from ragloom.types import ChunkSpan, Document

if TYPE_CHECKING:  # (the loading package is imported by the writes that read files)
    from ragloom.loading.run import FileRun

WRITE_BATCH = 512  # documents per write transaction when chunks are embedded
LEXICAL_WRITE_BATCH = 2048  # without embedding: fewer, larger transactions
WRITE_CHARS = 8_000_000  # and at most about this much text per transaction
ON_EMBED_ERROR = ("pending", "raise")


@dataclass(frozen=True)
class VectorPlan:
    """How a write gets its vectors: `on_error` "pending" (stored without, filled later) or
    "raise"; `later`: embed nothing now (lexically searchable at once, vectors pending and
    filled by `fill_pending`), only reuse known vectors; `reuse_from`: other documents whose
    vectors of the same texts may be reused (the old ids of renamed files)."""

    on_error: str = "pending"
    later: bool = False
    reuse_from: tuple[str, ...] = ()


class Ingest:
    """Writes documents into a store, embedding them with each collection's model."""

    def __init__(self, store: Store, models: Embedders) -> None:
        self.store = store
        self.models = models

    # -- collections ------------------------------------------------------------------
    def collection(self, name: str, config: CollectionConfig | None = None) -> CollectionInfo:
        """A collection to write into, created (with the default model) if new."""
        check_collection_name(name)
        known = self.store.collections().get(name)
        if known is not None:
            return known
        config = config or CollectionConfig()
        embedder = self.models.for_new_collection()
        raw = config.to_dict()
        if embedder is not None and not raw.get("embedding"):
            raw["embedding"] = embedding_config(embedder)
        with self.store.write() as write:
            return write.ensure_collection(name, raw)

    def embedder_for(self, info: CollectionInfo, has_chunks: bool) -> Embedder | None:
        return self.models.for_collection(info.name, info.config.get("embedding"), has_chunks)

    def writable(self, info: CollectionInfo, has_chunks: bool) -> Embedder | None:
        """The collection's embedder, refusing writes that would silently lack vectors."""
        stored = info.config.get("embedding")
        if stored and self.models.lexical_only:
            raise EmbeddingMismatch(
                f"collection {info.name!r} holds vectors of {stored.get('model')!r}"
                " but this index was opened without an embedding model",
                "open the index with embedder='auto' (the default) to add documents",
            )
        embedder = self.embedder_for(info, has_chunks)
        if embedder is not None and not stored:  # an empty lexical collection gains vectors
            raw = {**info.config, "embedding": embedding_config(embedder)}
            with self.store.write() as write:
                write.set_config(info, raw)
            info = CollectionInfo(info.id, info.name, raw)
        return embedder

    # -- documents --------------------------------------------------------------------
    def add(
        self,
        documents: Iterable[Document],
        collection: str,
        on_batch: Callable[[int], None] | None = None,
        enrichers: Sequence[Enricher] = (),
        on_embed_error: str = "pending",
        plan: VectorPlan | None = None,
    ) -> IndexReport:
        """Write documents in batches (`plan` overrides `on_embed_error`)."""
        plan = plan or VectorPlan(on_embed_error)
        if plan.on_error not in ON_EMBED_ERROR:
            raise InputError(f"on_embed_error must be one of {', '.join(ON_EMBED_ERROR)}")
        with self.store.busy():  # idle-time background work waits for the whole load
            return self._add(documents, collection, on_batch, enrichers, plan)

    def _add(
        self,
        documents: Iterable[Document],
        collection: str,
        on_batch: Callable[[int], None] | None,
        enrichers: Sequence[Enricher],
        plan: VectorPlan,
    ) -> IndexReport:
        report = IndexReport()
        self.collection(collection)
        batches: dict[str, list[tuple[Document, str]]] = {}
        chars: dict[str, int] = {}
        most = LEXICAL_WRITE_BATCH if self.models.lexical_only else WRITE_BATCH
        for doc in documents:
            checked = checked_document(doc)
            target = doc.collection or collection
            batch = batches.setdefault(target, [])
            batch.append(checked)
            chars[target] = chars.get(target, 0) + len(doc.text)
            if len(batch) >= most or chars[target] >= WRITE_CHARS:
                self._write_batch(target, batch, report, enrichers, plan)
                if on_batch:
                    on_batch(len(batch))
                batches[target], chars[target] = [], 0
        for target, batch in batches.items():
            if batch:
                self._write_batch(target, batch, report, enrichers, plan)
                if on_batch:
                    on_batch(len(batch))
        return report

    def _write_batch(
        self,
        name: str,
        batch: list[tuple[Document, str]],
        report: IndexReport,
        enrichers: Sequence[Enricher],
        plan: VectorPlan,
    ) -> None:
        info = self.collection(name)
        config = CollectionConfig.from_dict(info.config)
        latest = {d.id: d for d, _ in batch}  # the last version of an id wins
        metadata = {d.id: m for d, m in batch}
        salt = enrichers_fingerprint(enrichers)
        policy_of: dict[tuple[str | None, str | None], ChunkPolicy] = {}
        policies = {}
        for doc_id, d in latest.items():  # records share a policy: look each kind up once
            key = (d.source, d.language)
            policy = policy_of.get(key)
            if policy is None:
                policy = policy_of[key] = config.policy_for(d.source, d.language)
            policies[doc_id] = policy
        hashes = {
            doc_id: content_hash(d, metadata[doc_id], policies[doc_id], config.title_weight, salt)
            for doc_id, d in latest.items()
        }
        with self.store.snapshot() as snap:
            stored = snap.content_hashes(name, list(latest))
            has_chunks = snap.collection(name).size() > 0
            unchanged = [doc_id for doc_id in latest if stored.get(doc_id) == hashes[doc_id]]
            if unchanged:  # their chunks still count: re-indexing a file reports what it holds
                report.unchanged_chunks += sum(snap.chunk_counts(name, unchanged).values())
        changed = []
        for doc_id, doc in latest.items():
            if stored.get(doc_id) == hashes[doc_id]:
                report.unchanged += 1
            else:
                changed.append(doc)
        if not changed:
            return
        embedder = self.writable(info, has_chunks)
        info = self.store.collections()[name]
        prepared = [self._prepare(doc, policies[doc.id], enrichers, report) for doc in changed]
        terms = chunk_terms(prepared, analyzer_for(config.tokenizer), config.title_weight)
        vectors = self._vectors(info, embedder, prepared, report, plan)
        new_docs = []
        position = 0
        for doc, spans in prepared:
            chunks = []
            for n, span in enumerate(spans):
                vector = vectors[position] if vectors is not None else None
                position += 1
                chunks.append(
                    NewChunk(n, span.text, span.start, span.end, span.metadata, [], vector)
                )
            new_docs.append(NewDocument(doc, hashes[doc.id], chunks, metadata[doc.id]))
        with self.store.write() as write:
            outcome = write.put(info, new_docs, terms)
        report.documents += outcome.documents
        report.chunks += outcome.chunks

    @staticmethod
    def _prepare(
        doc: Document, policy: ChunkPolicy, enrichers: Sequence[Enricher], report: IndexReport
    ) -> tuple[Document, list[ChunkSpan]]:
        """Chunk and enrich one document: (document, [spans]). Fragments dropped by
        min_chars are counted in `report`."""
        from ragloom.chunking.chunker import split_document  # (not loaded for a search)

        spans, fragments = split_document(doc.text, policy, doc.source, doc.title, doc.structure)
        report.fragments += fragments
        if enrichers:
            spans = [enrich_span(doc, span, enrichers) for span in spans]
        return doc, spans

    def _vectors(
        self,
        info: CollectionInfo,
        embedder: Embedder | None,
        prepared: list,
        report: IndexReport,
        plan: VectorPlan,
    ) -> list[np.ndarray | None] | None:
        """A vector (or None: pending) per chunk; None when the collection has no model."""
        if embedder is None:
            return None
        texts = [embedding_text(doc.title, span.text) for doc, spans in prepared for span in spans]
        if not texts:
            return []
        hashes = [text_hash(doc.title, span.text) for doc, spans in prepared for span in spans]
        own = [doc.id for doc, _ in prepared]
        known = self.store.reusable_vectors(info, embedder.name, own + [*plan.reuse_from], hashes)
        todo: dict[bytes, int] = {}
        for i, h in enumerate(hashes):
            if h not in known and h not in todo:
                todo[h] = i
        if todo and not plan.later:
            started = time.perf_counter()
            try:
                fresh = embedder.embed([texts[i] for i in todo.values()])
            except EmbeddingError as exc:
                if plan.on_error == "raise":
                    raise
                report.embedding_error = f"{exc.code}: {exc.message}"
                fresh = None
            finally:
                report.embedding_seconds += time.perf_counter() - started
            if fresh is not None:
                known.update(zip(todo, fresh))
                report.embedded += len(todo)
        out: list[np.ndarray | None] = [known.get(h) for h in hashes]
        report.pending += sum(v is None for v in out)
        return out

    def add_files(
        self, run: FileRun, collection: str, enrichers: Sequence[Enricher], plan: VectorPlan
    ) -> IndexReport:
        """Index the documents of a run over files, in batches bounded in size whatever the
        files' sizes (one file is one document however it is reached: `ragloom.loading.run`)."""
        info = self.collection(collection)
        run.settle_ids(StoredFileIds(self.store, collection))
        run.validate = check_document
        run.known = known_converted(self.store, info, enrichers)
        report = IndexReport()
        from ragloom.loading.run import batches

        for batch in batches(run.documents()):  # bounded in size, whatever the files' sizes
            added = self.add(batch, collection, None, enrichers, plan=plan)
            summed = ("documents", "unchanged", "chunks", "pending", "embedded", "fragments")
            for name in (*summed, "unchanged_chunks"):
                setattr(report, name, getattr(report, name) + getattr(added, name))
            report.embedding_seconds += added.embedding_seconds
            report.embedding_error = added.embedding_error or report.embedding_error
        if run.unchanged:  # converted files whose bytes are as indexed: never converted
            with self.store.snapshot() as snap:
                counts = snap.chunk_counts(collection, run.unchanged)
            report.unchanged += len(run.unchanged)
            report.unchanged_chunks += sum(counts.values())
        self.collection(collection)  # exists even when no document landed
        return report

    def delete(self, doc_id: str, collection: str) -> int:
        """Remove a document and every trace of it; returns the number of chunks removed."""
        info = self.store.collections().get(collection)
        removed = None
        if info is not None:
            with self.store.write() as write:
                removed = write.delete(info, doc_id)
        if removed is None:
            raise NotFound(
                f"no document {doc_id!r} in collection {collection!r}",
                hints=worded("list the documents with {documents}"),
            )
        return removed

    def delete_many(self, doc_ids: Sequence[str], collection: str, batch: int = 512) -> int:
        """Remove documents that exist (others are ignored), `batch` per transaction;
        returns the number of documents removed."""
        info = self.store.collections().get(collection)
        removed = 0
        if info is None:
            return 0
        for start in range(0, len(doc_ids), batch):
            with self.store.write() as write:
                for doc_id in doc_ids[start : start + batch]:
                    removed += write.delete(info, doc_id) is not None
        return removed

    # -- vectors ----------------------------------------------------------------------
    def fill_waiting(self) -> None:
        """The service answered: give chunks that wait for vectors theirs too (bounded)."""
        with self.store.snapshot() as snap:
            waiting = [n for n in snap.collections() if snap.collection(n).pending()]
        for name in waiting:
            try:
                self.fill_pending(name, limit=4096)
            except EmbeddingError:
                return

    def reembed(self, collection: str, embedder: str | Embedder) -> int:
        """Replace a collection's vectors with `embedder`'s (all chunks, one transaction);
        returns the number of chunks embedded."""
        model = resolve_embedder(embedder)
        if model is None:
            raise InputError("reembed needs an embedding model", "pass embedder='local' or a spec")
        info = self.store.collections().get(collection)
        if info is None:
            raise NotFound(f"no collection {collection!r} in {self.store.location}")
        rows = self.store.chunk_texts(info)
        texts = [embedding_text(title, text) for _, title, text in rows]
        vectors = model.embed(texts) if texts else np.zeros((0, 1), np.float32)
        config = {**info.config, "embedding": embedding_config(model)}
        with self.store.write() as write:
            write.reset_vectors(info, config)
            if rows:
                write.set_vectors(info, [r for r, _, _ in rows], vectors)
        self.models.remember(model)
        calibrate(self.store, self.models, collection, force=True, quiet=True)
        return len(rows)

    def fill_pending(self, name: str, limit: int | None = None, batch: int = 256) -> int:
        """Embed chunks that wait for vectors; returns how many got one. Raises the
        embedding service's typed error when it still fails."""
        info = self.store.collections().get(name)
        if info is None or not info.config.get("embedding"):
            return 0
        embedder = self.embedder_for(info, has_chunks=True)
        if embedder is None:
            return 0
        done = 0
        while limit is None or done < limit:
            size = batch if limit is None else min(batch, limit - done)
            rows = self.store.pending(info, size)
            if not rows:
                break
            vectors = embedder.embed([embedding_text(title, text) for _, title, text in rows])
            with self.store.write() as write:
                filled = write.set_vectors(info, [r for r, _, _ in rows], vectors)
            done += len(rows)
            if not filled:
                break
        return done
