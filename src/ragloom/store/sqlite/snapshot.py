"""Reading one committed version of the embedded index: a read transaction plus the views
that match its generation exactly."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

import numpy as np

from ragloom.dense import views as dense_views
from ragloom.errors import NotFound
from ragloom.filters import FilterNode
from ragloom.lexical import views as lexical_views
from ragloom.lexical.bm25 import BM25Params
from ragloom.segments.view import CollectionView
from ragloom.store.base import CollectionReader, Snapshot
from ragloom.store.records import CollectionInfo, StoredChunk, StoredDocument
from ragloom.store.rows import from_json
from ragloom.store.sqlite.slices import rows_in
from ragloom.store.sqlite.views import CollectionRow
from ragloom.store.text import stitch, text_hash


class SQLiteCollection(CollectionReader):
    """One collection of a snapshot, searched through its view."""

    def __init__(self, snapshot: SQLiteSnapshot, row: CollectionRow, view: CollectionView) -> None:
        self.snapshot = snapshot
        self.row = row
        self.view = view
        self.info = CollectionInfo(row.id, row.name, row.config)
        self.config = view.config

    def lexical(
        self,
        terms: Sequence[str],
        k: int,
        params: BM25Params,
        where: FilterNode | None = None,
        where_key: str | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        ids = self.snapshot.term_ids(terms)
        return lexical_views.search_view(self.view, ids, k, params, where, where_key)

    def lexical_weighted(
        self,
        terms: Sequence[str],
        weights: Sequence[float],
        k: int,
        params: BM25Params,
        where: FilterNode | None = None,
        where_key: str | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        vocab = self.snapshot.term_id_map(terms)
        known = [(vocab[t], w) for t, w in zip(terms, weights) if t in vocab]
        ids, kept = [i for i, _ in known], [w for _, w in known]
        return lexical_views.search_view_weighted(self.view, ids, kept, k, params, where, where_key)

    def document_frequencies(self, terms: Sequence[str]) -> tuple[dict[str, int], int]:
        vocab = self.snapshot.term_id_map(terms)
        return {t: self.view.df(i) for t, i in vocab.items()}, self.view.n_live

    def dense(
        self,
        vector: np.ndarray,
        k: int,
        where: FilterNode | None = None,
        where_key: str | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        return dense_views.search_view(self.view, vector, k, where, where_key)

    def eligible_count(self, where: FilterNode, where_key: str | None) -> int | None:
        # (each part's mask and count are remembered: the legs read the same ones after)
        total = 0
        for part in self.view.parts:
            mask = part.eligible(where, where_key)
            total += part.segment.n if mask is None else part.allowed(mask)
        return total

    def metadata(self, rows: Sequence[int]) -> dict[int, dict[str, Any]]:
        return self.view.metadata(rows)

    def vectors(self, rows: Sequence[int]) -> np.ndarray:
        return self.view.vectors_of(rows)

    def counts(self) -> dict[str, Any]:
        conn = self.snapshot.conn
        documents = conn.execute(
            "SELECT count(*) FROM documents WHERE collection_id = ?", (self.row.id,)
        ).fetchone()[0]
        view = self.view
        return {
            "documents": int(documents),
            "chunks": view.n_live,
            "vectors": view.n_vectors if view.dimension else 0,
            "pending": view.n_pending if view.dimension or self.info.config.get("embedding") else 0,
            "terms": self.snapshot.store.vocabulary_size(view),
            "avg_chunk_terms": round(view.avgdl, 2),
            "segments": {
                "files": view.files,
                "memory": len(view.parts) - view.files,
                "graphs": sum(p.segment.ann is not None for p in view.parts),
            },
        }

    def size(self) -> int:
        return self.view.n_live

    def pending(self) -> int:
        return self.view.n_pending if self.info.config.get("embedding") else 0

    def field_values(self, key: str) -> list[Any]:
        return self.view.field_values(key)

    def chunk_documents(self) -> dict[int, str]:
        return dict(
            self.snapshot.conn.execute(
                "SELECT c.id, d.doc_id FROM chunks c JOIN documents d ON d.id = c.document_id"
                " WHERE c.collection_id = ?",
                (self.row.id,),
            )
        )


class SQLiteSnapshot(Snapshot):
    """A read transaction on this thread's connection, at generation `generation`."""

    def __init__(
        self, store: Any, conn: sqlite3.Connection, generation: int, rows: dict[str, CollectionRow]
    ) -> None:
        self.store = store
        self.conn = conn
        self.generation = generation
        self.rows = rows
        self._readers: dict[str, SQLiteCollection] = {}
        self._infos: dict[str, CollectionInfo] | None = None

    def collections(self) -> dict[str, CollectionInfo]:
        if self._infos is None:
            self._infos = {n: CollectionInfo(r.id, r.name, r.config) for n, r in self.rows.items()}
        return self._infos

    def collection(self, name: str) -> SQLiteCollection:
        reader = self._readers.get(name)
        if reader is not None:
            return reader
        row = self.rows.get(name)
        if row is None:
            raise NotFound(
                f"no collection {name!r} in {self.store.location}",
                f"known collections: {', '.join(sorted(self.rows)) or 'none yet'}",
            )
        view = self.store.view_at(self.conn, row, self.generation)
        reader = self._readers[name] = SQLiteCollection(self, row, view)
        return reader

    def term_id_map(self, terms: Sequence[str]) -> dict[str, int]:
        """term -> id for the terms the vocabulary knows."""
        return self.store.terms.lookup_at(self.conn, set(terms), self.generation)

    def term_ids(self, terms: Sequence[str]) -> list[int]:
        """Ids of the terms the vocabulary knows, in order (unknown terms are left out)."""
        vocab = self.store.terms.lookup_at(self.conn, set(terms), self.generation)
        return [vocab[t] for t in terms if t in vocab]

    def content_hashes(self, collection: str, doc_ids: Sequence[str]) -> dict[str, str]:
        row = self.rows.get(collection)
        if row is None or not doc_ids:
            return {}
        sql = (
            "SELECT doc_id, content_hash FROM documents"
            " WHERE collection_id = ? AND doc_id IN ({marks})"
        )
        return dict(rows_in(self.conn, sql, [row.id], list(doc_ids)))

    def file_ids_by_source(self, collection: str, sources: Sequence[str]) -> dict[str, list[str]]:
        row = self.rows.get(collection)
        if row is None or not sources:
            return {}
        sql = (
            "SELECT source, doc_id FROM documents WHERE collection_id = ?"
            " AND source IN ({marks}) AND (json_extract(metadata, '$.path') = doc_id"
            " OR json_extract(metadata, '$.path') || '#' || json_extract(metadata, '$.part')"
            " = doc_id)"
        )
        found: dict[str, list[str]] = {}
        for source, doc_id in rows_in(self.conn, sql, [row.id], list(sources)):
            found.setdefault(source, []).append(doc_id)
        return found

    def file_documents_under(self, collection: str, folder: str) -> dict[str, str]:
        row = self.rows.get(collection)
        if row is None:
            return {}
        prefix = folder.rstrip("/") + "/"
        sql = (
            "SELECT doc_id, source FROM documents WHERE collection_id = ?"
            " AND substr(source, 1, ?) = ? AND (json_extract(metadata, '$.path') = doc_id"
            " OR json_extract(metadata, '$.path') || '#' || json_extract(metadata, '$.part')"
            " = doc_id)"
        )
        return dict(self.conn.execute(sql, (row.id, len(prefix), prefix)))

    def sources_of(self, collection: str, doc_ids: Sequence[str]) -> dict[str, str | None]:
        row = self.rows.get(collection)
        if row is None or not doc_ids:
            return {}
        sql = "SELECT doc_id, source FROM documents WHERE collection_id = ? AND doc_id IN ({marks})"
        return dict(rows_in(self.conn, sql, [row.id], list(doc_ids)))

    def chunk_counts(self, collection: str, doc_ids: Sequence[str]) -> dict[str, int]:
        row = self.rows.get(collection)
        if row is None or not doc_ids:
            return {}
        sql = (
            "SELECT d.doc_id, count(k.id) FROM documents d LEFT JOIN chunks k"
            " ON k.document_id = d.id WHERE d.collection_id = ? AND d.doc_id IN ({marks})"
            " GROUP BY d.id"
        )
        return dict(rows_in(self.conn, sql, [row.id], list(doc_ids)))

    def document_vectors(
        self, collection: CollectionInfo, doc_ids: Sequence[str], wanted: set[bytes]
    ) -> dict[bytes, np.ndarray]:
        found: dict[bytes, np.ndarray] = {}
        if collection.name not in self.rows:
            return found
        records = rows_in(
            self.conn,
            "SELECT c.id, d.title, c.text FROM chunks c"
            " JOIN documents d ON d.id = c.document_id"
            " WHERE d.collection_id = ? AND d.doc_id IN ({marks})",
            [collection.id],
            list(doc_ids),
        )
        matches = [(r, h) for r, t, x in records if (h := text_hash(t, x)) in wanted]
        if matches:
            vectors = self.collection(collection.name).view.vectors_of([r for r, _ in matches])
            for (_, h), vector in zip(matches, vectors):
                if vector.any():
                    found[h] = vector
        return found

    def cached_vectors(self, model: str, hashes: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        cached = rows_in(
            self.conn,
            "SELECT text_hash, vector FROM vector_cache WHERE model = ? AND text_hash IN ({marks})",
            [model],
            list(hashes),
        )
        return {h: np.frombuffer(v, np.float32) for h, v in cached}

    def chunks(self, rows: Sequence[int]) -> dict[int, StoredChunk]:
        if not len(rows):
            return {}
        records = rows_in(
            self.conn,
            'SELECT k.id, k.n, k.text, k.start, k."end", k.metadata, d.doc_id, d.source,'
            " d.title, d.metadata, c.name FROM chunks k"
            " JOIN documents d ON d.id = k.document_id"
            " JOIN collections c ON c.id = d.collection_id WHERE k.id IN ({marks})",
            [],
            [int(r) for r in rows],
        )
        out = {}
        for row_id, n, text, start, end, meta, doc_id, source, title, doc_meta, name in records:
            metadata = from_json(doc_meta)
            if meta:
                metadata.update(from_json(meta))
            out[row_id] = StoredChunk(
                row_id, f"{doc_id}-{n}", doc_id, n, text, start, end, metadata, source, title, name
            )
        return out

    def document_text(self, collection: str, doc_id: str) -> str:
        row = self.rows.get(collection)
        found = None
        if row is not None:
            found = self.conn.execute(
                "SELECT id, length, gaps FROM documents WHERE collection_id = ? AND doc_id = ?",
                (row.id, doc_id),
            ).fetchone()
        if found is None:
            raise NotFound(f"no document {doc_id!r} in collection {collection!r}")
        document, length, gaps = found
        pieces = [(start, text) for start, text in json.loads(gaps)] if gaps else []
        pieces += self.conn.execute(
            "SELECT start, text FROM chunks WHERE document_id = ?", (document,)
        ).fetchall()
        return stitch(pieces, int(length))

    def documents(
        self, collection: str | None, offset: int = 0, limit: int = 100
    ) -> list[StoredDocument]:
        where, params = "", ()
        if collection is not None:
            row = self.rows.get(collection)
            if row is None:
                raise NotFound(f"no collection {collection!r} in {self.store.location}")
            where, params = "WHERE d.collection_id = ?", (row.id,)
        rows = self.conn.execute(
            f"SELECT d.doc_id, c.name, d.source, d.title, d.metadata, d.content_hash,"
            f" (SELECT count(*) FROM chunks k WHERE k.document_id = d.id), d.indexed_at, d.id"
            f" FROM documents d JOIN collections c ON c.id = d.collection_id {where}"
            f" ORDER BY c.name, d.doc_id LIMIT ? OFFSET ?",
            (*params, limit, offset),
        ).fetchall()
        pending = self._pending_by_document([(r[1], r[8]) for r in rows])
        return [
            StoredDocument(
                r[0], r[1], r[2], r[3], json.loads(r[4]), r[5], r[6], r[7], pending.get(r[8], 0)
            )
            for r in rows
        ]

    def _pending_by_document(self, documents: list[tuple[str, int]]) -> dict[int, int]:
        """Chunks waiting for a vector, per document row id."""
        out: dict[int, int] = {}
        by_collection: dict[str, list[int]] = {}
        for name, document in documents:
            if self.rows[name].config.get("embedding"):
                by_collection.setdefault(name, []).append(document)
        for name, ids in by_collection.items():
            chunks = rows_in(
                self.conn,
                "SELECT document_id, id FROM chunks WHERE document_id IN ({marks})",
                [],
                ids,
            )
            rows = [c for _, c in chunks]
            vectors = self.collection(name).vectors(rows) if rows else None
            for (document, _), vector in zip(chunks, vectors if vectors is not None else []):
                if not vector.any():
                    out[document] = out.get(document, 0) + 1
        return out

    def document_counts(self) -> dict[str, dict[str, int]]:
        rows = self.conn.execute(
            "SELECT c.name, (SELECT count(*) FROM documents d WHERE d.collection_id = c.id),"
            " (SELECT count(*) FROM chunks k WHERE k.collection_id = c.id)"
            " FROM collections c ORDER BY c.name"
        ).fetchall()
        return {name: {"documents": docs, "chunks": chunks} for name, docs, chunks in rows}
