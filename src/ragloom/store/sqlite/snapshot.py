"""Reading one committed version of the embedded index: a read transaction plus the views
that match its generation exactly."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

import numpy as np

from ragloom.dense import cosine_search
from ragloom.errors import NotFound
from ragloom.filters import FilterNode
from ragloom.lexical import bm25_search
from ragloom.segments.view import CollectionView
from ragloom.store.base import CollectionReader, DenseQuery, LexicalQuery, Ranked
from ragloom.store.document_text import text_hash
from ragloom.store.records import CollectionInfo, StoredChunk, StoredDocument
from ragloom.store.rows import from_json
from ragloom.store.sql import SQLITE, SQLSnapshot
from ragloom.store.sqlite.view_history import SQLiteCollectionRow, ViewHistory, vocabulary_size
from ragloom.store.sqlite.vocabulary import TermCache


class SQLiteCollection(CollectionReader):
    """One collection of a snapshot, searched through its view."""

    def __init__(
        self, snapshot: SQLiteSnapshot, row: SQLiteCollectionRow, view: CollectionView
    ) -> None:
        self.snapshot = snapshot
        self.row = row
        self.view = view
        self.info = CollectionInfo(row.id, row.name, row.config)
        self.config = view.config

    def lexical(self, query: LexicalQuery, k: int) -> Ranked:
        if query.weights is None:
            ids = self.snapshot.term_ids(query.terms)
            return bm25_search.search_view(
                self.view, ids, k, query.params, query.where, query.where_key
            )
        vocab = self.snapshot.term_id_map(query.terms)
        known = [(vocab[t], w) for t, w in zip(query.terms, query.weights) if t in vocab]
        ids, weights = [i for i, _ in known], [w for _, w in known]
        return bm25_search.search_view(
            self.view, ids, k, query.params, query.where, query.where_key, weights
        )

    def segments_view(self) -> CollectionView:
        return self.view

    def document_frequencies(self, terms: Sequence[str]) -> tuple[dict[str, int], int]:
        vocab = self.snapshot.term_id_map(terms)
        return {t: self.view.df(i) for t, i in vocab.items()}, self.view.n_live

    def dense(self, query: DenseQuery, k: int) -> Ranked:
        self.prepare_dense()
        return cosine_search.search_view(self.view, query.vector, k, query.where, query.where_key)

    def prepare_dense(self) -> None:
        """The segment files' search graphs, mapped the first time a reader asks (a lexical
        search never does: mapping them imported faiss, 76 ms of a one-shot search at 100k)."""
        view = self.view
        self.snapshot.views.files.attached([p.segment for p in view.parts[: view.files]])

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
        self.prepare_dense()  # (the graphs it counts)
        view = self.view
        return {
            "documents": int(documents),
            "chunks": view.n_live,
            "vectors": view.n_vectors if view.dimension else 0,
            "pending": view.n_pending if view.dimension or self.info.config.get("embedding") else 0,
            "terms": vocabulary_size(view),
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


class SQLiteSnapshot(SQLSnapshot[SQLiteCollectionRow]):
    """A read transaction on this thread's connection, at generation `generation`."""

    dialect = SQLITE

    def __init__(
        self,
        views: ViewHistory,
        terms: TermCache,
        location: str,
        conn: sqlite3.Connection,
        generation: int,
        rows: dict[str, SQLiteCollectionRow],
    ) -> None:
        super().__init__(location, conn, generation, rows)
        self.views = views
        self.terms = terms
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
            raise self.unknown(name)
        view = self.views.at(self.conn, row, self.generation)
        reader = self._readers[name] = SQLiteCollection(self, row, view)
        return reader

    def term_id_map(self, terms: Sequence[str]) -> dict[str, int]:
        """term -> id for the terms the vocabulary knows."""
        return self.terms.lookup_at(self.conn, set(terms), self.generation)

    def term_ids(self, terms: Sequence[str]) -> list[int]:
        """Ids of the terms the vocabulary knows, in order (unknown terms are left out)."""
        vocab = self.terms.lookup_at(self.conn, set(terms), self.generation)
        return [vocab[t] for t in terms if t in vocab]

    def document_vectors(
        self, collection: CollectionInfo, doc_ids: Sequence[str], wanted: set[bytes]
    ) -> dict[bytes, np.ndarray]:
        found: dict[bytes, np.ndarray] = {}
        if collection.name not in self.rows:
            return found
        records = SQLITE.rows_in(
            self.conn,
            "SELECT c.id, d.title, c.text FROM chunks c"
            " JOIN documents d ON d.id = c.document_id"
            " WHERE d.collection_id = ? AND d.doc_id {keys}",
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

    def chunks(self, rows: Sequence[int]) -> dict[int, StoredChunk]:
        if not len(rows):
            return {}
        records = SQLITE.rows_in(
            self.conn,
            'SELECT k.id, k.n, k.text, k.start, k."end", k.metadata, d.doc_id, d.source,'
            " d.title, d.metadata, c.name FROM chunks k"
            " JOIN documents d ON d.id = k.document_id"
            " JOIN collections c ON c.id = d.collection_id WHERE k.id {keys}",
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

    def documents(
        self, collection: str | None, offset: int = 0, limit: int = 100
    ) -> list[StoredDocument]:
        where, params = "", tuple[Any, ...]()
        if collection is not None:
            row = self.rows.get(collection)
            if row is None:
                raise NotFound(f"no collection {collection!r} in {self.location}")
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
            chunks = SQLITE.rows_in(
                self.conn,
                "SELECT document_id, id FROM chunks WHERE document_id {keys}",
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
