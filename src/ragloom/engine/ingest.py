"""The write path: documents -> chunks, terms and vectors -> one store transaction per batch.

Chunking, enrichment, tokenizing and embedding all happen before the transaction, so the
write lock is held only for the database work. If the embedding service fails, the batch
is still stored and lexically searchable at once; its chunks wait for vectors ("pending")
until a later call embeds them, unless the caller asked for the failure instead.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ragloom.config import CollectionConfig
from ragloom.embedding import Embedder, resolve_embedder
from ragloom.engine.calibration import calibrate
from ragloom.engine.documents import check_collection_name, check_document, checked_batches
from ragloom.engine.embedders import Embedders, embedding_config
from ragloom.engine.report import IndexReport
from ragloom.engine.stored_files import StoredFileIds, known_converted
from ragloom.engine.vectors import ON_EMBED_ERROR, VectorPlan, embedding_text
from ragloom.engine.write_batch import collection_for_write, write_batch
from ragloom.enrich import Enricher
from ragloom.errors import EmbeddingError, InputError, NotFound, worded
from ragloom.store.base import Store
from ragloom.store.records import CollectionInfo
from ragloom.types import Document

if TYPE_CHECKING:  # (the loading package is imported by the writes that read files)
    from ragloom.loading.run import FileRun

WRITE_BATCH = 512  # documents per write transaction when chunks are embedded
LEXICAL_WRITE_BATCH = 2048  # without embedding: fewer, larger transactions
WRITE_CHARS = 8_000_000  # and at most about this much text per transaction


class Ingest:
    """Writes documents into a store, embedding them with each collection's model."""

    def __init__(self, store: Store, models: Embedders) -> None:
        self.store = store
        self.models = models

    # -- collections ------------------------------------------------------------------
    def collection(self, name: str, config: CollectionConfig | None = None) -> CollectionInfo:
        """A collection to write into, created (with the default model) if new."""
        check_collection_name(name)
        return collection_for_write(self.store, self.models, name, config)

    def embedder_for(self, info: CollectionInfo, has_chunks: bool) -> Embedder | None:
        return self.models.for_collection(info.name, info.config.get("embedding"), has_chunks)

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
        most = LEXICAL_WRITE_BATCH if self.models.lexical_only else WRITE_BATCH
        for target, batch in checked_batches(documents, collection, most, WRITE_CHARS):
            write_batch(self.store, self.models, target, batch, enrichers, plan, report)
            if on_batch:
                on_batch(len(batch))
        return report

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
