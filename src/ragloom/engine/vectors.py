"""A write batch's vectors: those already computed for the same texts reused, the rest
embedded in one call, and on a failing service either the typed error or chunks stored
without vectors ("pending", filled later) as the write's plan says."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ragloom.embedding import Embedder
from ragloom.engine.report import IndexReport
from ragloom.errors import EmbeddingError
from ragloom.store.base import Store
from ragloom.store.document_text import text_hash
from ragloom.store.records import CollectionInfo
from ragloom.types import ChunkSpan, Document

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


def embedding_text(title: str | None, text: str) -> str:
    """What the dense model reads for a chunk: its document's title, then its text."""
    return f"{title}\n{text}" if title else text


def batch_vectors(
    store: Store,
    info: CollectionInfo,
    embedder: Embedder | None,
    prepared: Sequence[tuple[Document, Sequence[ChunkSpan]]],
    plan: VectorPlan,
    report: IndexReport,
) -> list[np.ndarray | None] | None:
    """A vector (or None: pending) per chunk of `prepared`, in order; None when the
    collection has no model. What was embedded, left pending or failed is told `report`."""
    if embedder is None:
        return None
    texts = [embedding_text(doc.title, span.text) for doc, spans in prepared for span in spans]
    if not texts:
        return []
    hashes = [text_hash(doc.title, span.text) for doc, spans in prepared for span in spans]
    own = [doc.id for doc, _ in prepared]
    known = store.reusable_vectors(info, embedder.name, own + [*plan.reuse_from], hashes)
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
