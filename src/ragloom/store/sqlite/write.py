"""One write transaction of the embedded store, and the in-memory changes it will publish.

Everything a write does to the database happens inside one `BEGIN IMMEDIATE` transaction.
What it will do to in-memory views (new chunks as a small segment, rows deleted, vectors
filled, new vocabulary) is only *recorded* here and applied by the store after COMMIT has
succeeded, so a failed commit leaves memory exactly as it was.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ragloom.segments.build import segment_from
from ragloom.segments.postings import count_ids, encode_flat
from ragloom.segments.segment import Segment
from ragloom.store.document_text import text_hash
from ragloom.store.records import ChunkTerms, CollectionInfo, NewDocuments, WriteOutcome
from ragloom.store.rows import (
    checked_vectors,
    chunk_vectors_dimension,
    document_row,
    epoch_of,
    to_json,
)
from ragloom.store.sql import SQLITE, SQLWrite, sliced
from ragloom.store.sqlite.view_history import ViewHistory
from ragloom.store.sqlite.vocabulary import NumberedTerms, TermCache
from ragloom.text.numbering import TermNumbers


@dataclass
class Changes:
    """What one write did to one collection, to publish after commit."""

    added: list[Segment] = field(default_factory=list)
    removed: list[int] = field(default_factory=list)
    late: dict[int, np.ndarray] = field(default_factory=dict)
    layout: bool = False  # settings or vectors' model changed: views reload


class SQLiteWrite(SQLWrite):
    """Operations inside one open write transaction (`conn` holds SQLite's write lock)."""

    dialect = SQLITE

    def __init__(
        self,
        views: ViewHistory,
        terms: TermCache,
        numbered: NumberedTerms,
        conn: sqlite3.Connection,
        generation: int,
    ) -> None:
        self.views = views
        self.terms = terms
        self.numbering = numbered  # the store's: the numbers -> term ids it learned
        self.conn = conn
        self.generation = generation  # the generation this write will commit as
        self._configs: dict[int, dict[str, Any]] = {}
        self.changes: dict[int, Changes] = {}
        self.new_terms: dict[str, int] = {}
        self.terms_top: int | None = None  # largest committed term id, once looked at
        self.inserted_terms = 0  # ids terms_top + 1 .. terms_top + inserted_terms are ours
        # (numbering, numbers, term ids) learned by this write: the store's number -> id
        # tables take them after commit
        self.numbered: list[tuple[TermNumbers, np.ndarray, np.ndarray]] = []
        self.touched: set[int] = set()

    def _changes(self, collection: CollectionInfo) -> Changes:
        if collection.id not in self.changes:
            self.views.prepare(self.conn, collection.id)  # catch up before changing
            self.changes[collection.id] = Changes()
        self.touched.add(collection.id)
        return self.changes[collection.id]

    # -- collections ------------------------------------------------------------------
    def insert_collection(self, name: str, config: dict[str, Any]) -> int:
        cur = self.conn.execute(
            "INSERT INTO collections (name, config, changed, layout) VALUES (?, ?, ?, ?)",
            (name, to_json(config), self.generation, self.generation),
        )
        return int(cur.lastrowid)  # type: ignore[arg-type]

    def set_config(self, collection: CollectionInfo, config: dict[str, Any]) -> None:
        self.conn.execute(
            "UPDATE collections SET config = ?, layout = ? WHERE id = ?",
            (to_json(config), self.generation, collection.id),
        )
        self._configs[collection.id] = config
        self._changes(collection).layout = True

    # -- documents --------------------------------------------------------------------
    def _remove(self, collection: CollectionInfo, document_ids: Sequence[int]) -> list[int]:
        """Delete documents (their row ids) and their chunks; returns the chunk rows removed."""
        if not document_ids:
            return []
        chunk_rows = [
            r[0]
            for r in SQLITE.rows_in(
                self.conn, "SELECT id FROM chunks WHERE document_id {keys}", [], document_ids
            )
        ]
        self._cache_vectors(collection, chunk_rows)
        for part in sliced(chunk_rows):
            marks = ",".join("?" * len(part))
            self.conn.execute(f"DELETE FROM vectors WHERE chunk_id IN ({marks})", part)
            self.conn.execute(f"DELETE FROM chunks WHERE id IN ({marks})", part)
        self.conn.executemany(
            "INSERT OR REPLACE INTO removed (chunk_id, collection_id, generation) VALUES (?,?,?)",
            ((r, collection.id, self.generation) for r in chunk_rows),
        )
        for part in sliced(list(document_ids)):
            marks = ",".join("?" * len(part))
            self.conn.execute(f"DELETE FROM documents WHERE id IN ({marks})", part)
        return chunk_rows

    def _cache_vectors(self, collection: CollectionInfo, chunk_rows: Sequence[int]) -> None:
        """Keep the vectors of chunks about to be deleted, so re-adding their text is free."""
        model = (self.stored_config(collection).get("embedding") or {}).get("model")
        view = self.views.current(collection.id)
        if not model or view is None or not chunk_rows:
            return
        texts = SQLITE.rows_in(
            self.conn,
            "SELECT c.id, d.title, c.text FROM chunks c JOIN documents d ON d.id = c.document_id"
            " WHERE c.id {keys}",
            [],
            chunk_rows,
        )
        vectors = view.vectors_of([r for r, _, _ in texts])
        entries = [
            (model, text_hash(title, text), vector.tobytes())
            for (_, title, text), vector in zip(texts, vectors)
            if vector.any()
        ]
        if not entries:
            return
        self.conn.executemany(
            "INSERT OR REPLACE INTO vector_cache (model, text_hash, vector) VALUES (?, ?, ?)",
            entries,
        )
        self.trim_vector_cache()

    def put(
        self, collection: CollectionInfo, documents: NewDocuments, terms: ChunkTerms | None = None
    ) -> WriteOutcome:
        changes = self._changes(collection)
        outcome = WriteOutcome()
        if not documents:
            return outcome
        existing = self.document_rows(collection, [d.document.id for d in documents])
        removed = self._remove(collection, existing)
        changes.removed.extend(removed)
        outcome.removed_chunks = len(removed)
        chunks = [c for d in documents for c in d.chunks]
        terms = ChunkTerms.for_chunks(terms, chunks)
        postings = count_ids(self._term_ids(terms), terms.lengths)
        config = self.stored_config(collection)
        vectors = [c.vector for c in chunks]
        dimension, changed = chunk_vectors_dimension(config, [v for v in vectors if v is not None])
        if changed is not None:
            self.set_config(collection, changed)
        rows = self._insert(collection, documents, postings)
        self.conn.executemany(
            "INSERT INTO vectors (chunk_id, collection_id, generation, vector) VALUES (?,?,?,?)",
            (
                (row, collection.id, self.generation, np.asarray(v, np.float32).tobytes())
                for row, v in zip(rows, vectors)
                if v is not None
            ),
        )
        metadatas = [
            {**d.document.metadata, **c.metadata} if c.metadata else d.document.metadata
            for d in documents
            for c in d.chunks
        ]
        if rows:
            changes.added.append(
                segment_from(rows, postings, metadatas, vectors, dimension, epoch_of(config))
            )
        outcome.documents = len(documents)
        outcome.chunks = len(rows)
        outcome.rows = rows
        outcome.pending = sum(v is None for v in vectors) if dimension is not None else 0
        return outcome

    def _term_ids(self, terms: ChunkTerms) -> np.ndarray:
        """The store's term id of every term number in `terms` (one array lookup for terms
        this process has written before; the others found or inserted by name)."""
        ids = self.numbering.ids(terms.names, terms.numbers)
        unknown = ids < 0
        if unknown.any():
            wanted = terms.numbers[unknown]
            present = np.zeros(len(terms.names), bool)  # distinct numbers without a sort
            present[wanted] = True
            numbers = np.flatnonzero(present)
            names = terms.names.names(numbers.tolist())
            vocab = self._vocabulary(names)
            found = np.fromiter(map(vocab.__getitem__, names), np.int64, len(names))
            id_of = np.empty(len(terms.names), np.int64)  # read only where just written
            id_of[numbers] = found
            ids[unknown] = id_of[wanted]
            self.numbered.append((terms.names, numbers, found))
        return ids

    def _vocabulary(self, terms: Iterable[str]) -> dict[str, int]:
        """Ids of every term, inserting terms never seen (recorded to publish after commit).
        A term missing from a cache that holds every committed term is new: no lookup."""
        wanted = set(terms)
        vocab = self.terms.known(wanted)
        vocab.update((t, self.new_terms[t]) for t in wanted - vocab.keys() if t in self.new_terms)
        missing = sorted(wanted - vocab.keys())
        if not missing:
            return vocab
        top = self.conn.execute("SELECT coalesce(max(id), 0) FROM terms").fetchone()[0]
        self.terms_top = top - self.inserted_terms
        fresh = missing
        if not self.terms.holds_all(self.terms_top):
            found = SQLITE.rows_in(
                self.conn, "SELECT term, id FROM terms WHERE term {keys}", [], missing
            )
            vocab.update(found)
            self.new_terms.update(found)
            fresh = sorted(wanted - vocab.keys())
        if fresh:
            pairs = list(zip(fresh, range(top + 1, top + 1 + len(fresh))))
            self.conn.executemany("INSERT INTO terms (term, id) VALUES (?, ?)", pairs)
            vocab.update(pairs)
            self.new_terms.update(pairs)
            self.inserted_terms += len(fresh)
        return vocab

    def _insert(
        self,
        collection: CollectionInfo,
        documents: NewDocuments,
        postings: tuple[np.ndarray, np.ndarray, np.ndarray],
    ) -> list[int]:
        """Insert documents and chunks with explicit row ids; returns the chunk row ids."""
        conn = self.conn
        doc_base = conn.execute("SELECT coalesce(max(id), 0) FROM documents").fetchone()[0] + 1
        seq = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'chunks'").fetchone()
        top = conn.execute("SELECT coalesce(max(id), 0) FROM chunks").fetchone()[0]
        chunk_base = max(seq[0] if seq else 0, top) + 1
        now = time.time()
        doc_rows, chunk_rows = [], []
        next_row = chunk_base
        post = iter(encode_flat(*postings))
        for i, new in enumerate(documents):
            doc_rows.append((doc_base + i, *document_row(new, collection.id, now)))
            for c in new.chunks:
                chunk_rows.append(
                    (
                        next_row,
                        collection.id,
                        doc_base + i,
                        c.n,
                        c.start,
                        c.end,
                        c.text,
                        to_json(c.metadata) if c.metadata else None,
                        next(post),
                    )
                )
                next_row += 1
        conn.executemany(
            "INSERT INTO documents (id, collection_id, doc_id, source, title, metadata,"
            " content_hash, length, gaps, indexed_at) VALUES (?,?,?,?,?,?,?,?,?,?)",
            doc_rows,
        )
        conn.executemany(
            'INSERT INTO chunks (id, collection_id, document_id, n, start, "end", text, metadata,'
            " terms) VALUES (?,?,?,?,?,?,?,?,?)",
            chunk_rows,
        )
        return list(range(chunk_base, next_row))

    def delete(self, collection: CollectionInfo, doc_id: str) -> int | None:
        changes = self._changes(collection)
        row = self.conn.execute(
            "SELECT id FROM documents WHERE collection_id = ? AND doc_id = ?",
            (collection.id, doc_id),
        ).fetchone()
        if row is None:
            return None
        removed = self._remove(collection, [row[0]])
        changes.removed.extend(removed)
        return len(removed)

    # -- vectors ----------------------------------------------------------------------
    def set_vectors(
        self, collection: CollectionInfo, rows: Sequence[int], vectors: np.ndarray
    ) -> int:
        changes = self._changes(collection)
        if not len(rows):
            return 0
        vectors, changed = checked_vectors(self.stored_config(collection), vectors)
        if changed is not None:
            self.set_config(collection, changed)
        alive = {
            r[0]
            for r in SQLITE.rows_in(
                self.conn,
                "SELECT id FROM chunks WHERE collection_id = ? AND id {keys}",
                [collection.id],
                [int(r) for r in rows],
            )
        }
        entries = [(int(r), v) for r, v in zip(rows, vectors) if int(r) in alive]
        self.conn.executemany(
            "INSERT OR REPLACE INTO vectors (chunk_id, collection_id, generation, vector)"
            " VALUES (?, ?, ?, ?)",
            ((r, collection.id, self.generation, v.tobytes()) for r, v in entries),
        )
        changes.late.update(entries)
        return len(entries)

    def reset_vectors(self, collection: CollectionInfo, config: dict[str, Any]) -> None:
        old = self.stored_config(collection)
        embedding = dict(config.get("embedding") or {})
        embedding["epoch"] = epoch_of(old) + 1
        self.conn.execute("DELETE FROM vectors WHERE collection_id = ?", (collection.id,))
        self.set_config(collection, {**config, "embedding": embedding})

    # -- commit -----------------------------------------------------------------------
    def finish(self) -> None:
        """Record the new generation (called just before COMMIT)."""
        if not self.touched:
            return
        self.conn.execute(
            "UPDATE meta SET value = ? WHERE key = 'generation'", (str(self.generation),)
        )
        for part in sliced(sorted(self.touched)):
            marks = ",".join("?" * len(part))
            self.conn.execute(
                f"UPDATE collections SET changed = ? WHERE id IN ({marks})",
                (self.generation, *part),
            )
