"""Embedded store: one SQLite file in WAL mode; writes are serialized, reads run in parallel."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragloom.errors import NotFound, StoreError
from ragloom.lexical.index import Postings
from ragloom.models import Document
from ragloom.store.schema import APPLICATION_ID, SCHEMA, SCHEMA_VERSION


@dataclass(frozen=True)
class StoredDocument:
    """A document row as the store keeps it (without its text)."""

    doc_id: str
    collection: str
    source: str | None
    title: str | None
    metadata: dict[str, Any]
    content_hash: str
    chunks: int
    indexed_at: float


@dataclass(frozen=True)
class StoredChunk:
    """A chunk row joined with its document, ready to become a hit."""

    row_id: int
    chunk_id: str
    document_id: str
    n: int
    text: str
    start: int
    end: int
    metadata: dict[str, Any]
    source: str | None
    title: str | None
    collection: str


@dataclass(frozen=True)
class NewChunk:
    """A chunk to insert with its lexical postings."""

    n: int
    text: str
    start: int
    end: int
    metadata: dict[str, Any]
    postings: Postings


@dataclass(frozen=True)
class NewDocument:
    """A document to insert with its chunks."""

    document: Document
    content_hash: str
    chunks: list[NewChunk]


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True) if value else "{}"


class SQLiteStore:
    """Owns the index file. One writer connection behind a lock, one reader per thread."""

    def __init__(self, path: str | Path, create: bool = True) -> None:
        self.path = Path(path)
        if not self.path.exists():
            if not create:
                raise StoreError(
                    f"no index at {self.path}", "create one with `ragloom index PATH...`"
                )
            if not self.path.parent.exists():
                raise StoreError(
                    f"cannot create index {self.path}: folder {self.path.parent} does not exist",
                    "create the folder or choose another --index path",
                )
        elif self.path.is_dir():
            raise StoreError(f"{self.path} is a folder, not an index file", "pass a file path")
        self._write_lock = threading.RLock()
        self._readers_lock = threading.Lock()
        self._local = threading.local()
        self._wconn = self._connect()
        self._init_schema()

    # -- connections ------------------------------------------------------------------
    def _connect(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(
                self.path, check_same_thread=False, isolation_level=None, timeout=30.0
            )
            conn.execute("PRAGMA foreign_keys=ON")
            conn.execute("PRAGMA busy_timeout=30000")
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open index {self.path}: {exc}") from exc
        return conn

    def _reader(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect()
            conn.execute("PRAGMA query_only=ON")
            self._local.conn = conn
            with self._readers_lock:  # not the write lock: a reader never waits for a writer
                self._readers.append(conn)
        return conn

    def _init_schema(self) -> None:
        self._readers: list[sqlite3.Connection] = []
        conn = self._wconn
        try:
            app_id = conn.execute("PRAGMA application_id").fetchone()[0]
            tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise StoreError(
                f"{self.path} is not a ragloom index (not a readable SQLite file: {exc})",
                "point --index at a ragloom index file, or remove the file to start anew",
            ) from exc
        if app_id != APPLICATION_ID and tables:
            conn.close()
            raise StoreError(
                f"{self.path} is a SQLite file that ragloom did not create; refusing to touch it",
                "point --index at a ragloom index file or a new path",
            )
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            # Idempotent: creates a new file's tables and any table added since a file was made.
            conn.executescript(
                f"BEGIN IMMEDIATE; {SCHEMA}; PRAGMA application_id={APPLICATION_ID};"
                f" INSERT OR IGNORE INTO meta VALUES ('schema_version', '{SCHEMA_VERSION}');"
                " COMMIT;"
            )
            version = int(
                conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0]
            )
        except (sqlite3.DatabaseError, TypeError) as exc:
            conn.close()
            raise StoreError(f"{self.path} is a damaged ragloom index: {exc}") from exc
        if version > SCHEMA_VERSION:
            conn.close()
            raise StoreError(
                f"{self.path} was written by a newer ragloom (schema {version})",
                "upgrade ragloom to read it",
            )

    def close(self) -> None:
        """Close every connection this store opened."""
        with self._write_lock, self._readers_lock:
            for conn in self._readers:
                conn.close()
            self._readers.clear()
            self._wconn.close()

    def data_version(self) -> int:
        """Changes whenever *another* connection commits (cheap change detection).

        Asked on the writer connection (its own commits must not count) but without the
        write lock when SQLite is serialized, so a search never waits for a write batch.
        """
        if sqlite3.threadsafety == 3:
            return int(self._wconn.execute("PRAGMA data_version").fetchone()[0])
        with self._write_lock:
            return int(self._wconn.execute("PRAGMA data_version").fetchone()[0])

    # -- transactions -----------------------------------------------------------------
    @property
    def write_lock(self) -> threading.RLock:
        """Held by every write; hold it across a write and the in-memory update that follows,
        so that in-memory state changes in commit order."""
        return self._write_lock

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One atomic write: commits on success, rolls back on any exception."""
        with self._write_lock:
            conn = self._wconn
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.DatabaseError as exc:
                raise StoreError(f"cannot write to {self.path}: {exc}") from exc
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            try:
                conn.execute("COMMIT")
            except sqlite3.DatabaseError as exc:
                conn.execute("ROLLBACK")
                raise StoreError(f"could not commit to {self.path}: {exc}") from exc

    # -- collections ------------------------------------------------------------------
    def collections(self) -> dict[str, tuple[int, dict[str, Any]]]:
        """Every collection: name -> (id, config)."""
        rows = self._reader().execute("SELECT id, name, config FROM collections").fetchall()
        return {name: (cid, json.loads(cfg)) for cid, name, cfg in rows}

    def ensure_collection(self, name: str, config: dict[str, Any]) -> int:
        """Create the collection if missing; return its id."""
        with self.write() as conn:
            row = conn.execute("SELECT id FROM collections WHERE name=?", (name,)).fetchone()
            if row:
                return int(row[0])
            cur = conn.execute(
                "INSERT INTO collections (name, config) VALUES (?, ?)", (name, _json(config))
            )
            return int(cur.lastrowid)  # type: ignore[arg-type]

    def set_collection_config(self, collection_id: int, config: dict[str, Any]) -> None:
        with self.write() as conn:
            conn.execute(
                "UPDATE collections SET config=? WHERE id=?", (_json(config), collection_id)
            )

    # -- vocabulary -------------------------------------------------------------------
    def terms_since(self, after_id: int, conn: sqlite3.Connection | None = None) -> list[tuple]:
        """Vocabulary entries with id > after_id (to catch up with other writers)."""
        conn = conn or self._reader()
        return conn.execute(
            "SELECT id, term FROM terms WHERE id > ? ORDER BY id", (after_id,)
        ).fetchall()

    # -- documents --------------------------------------------------------------------
    @staticmethod
    def _rows_in(
        conn: sqlite3.Connection, sql: str, first: Any, keys: Sequence[Any]
    ) -> list[tuple]:
        """Run `sql` (`?` for `first`, `{marks}` for keys) over keys in slices that stay
        under SQLite's parameter limit; all rows."""
        rows: list[tuple] = []
        for i in range(0, len(keys), 500):
            part = list(keys[i : i + 500])
            marks = ",".join("?" * len(part))
            rows.extend(conn.execute(sql.format(marks=marks), (first, *part)).fetchall())
        return rows

    def content_hashes(self, collection_id: int, doc_ids: Sequence[str]) -> dict[str, str]:
        """Stored content hash of each of `doc_ids` that exists."""
        sql = (
            "SELECT doc_id, content_hash FROM documents"
            " WHERE collection_id = ? AND doc_id IN ({marks})"
        )
        return dict(self._rows_in(self._reader(), sql, collection_id, doc_ids))

    @classmethod
    def existing_ids(
        cls, conn: sqlite3.Connection, collection_id: int, doc_ids: Sequence[str]
    ) -> set[str]:
        """Which of `doc_ids` are stored, as seen inside a write (no other writer can race)."""
        sql = "SELECT doc_id FROM documents WHERE collection_id = ? AND doc_id IN ({marks})"
        return {row[0] for row in cls._rows_in(conn, sql, collection_id, doc_ids)}

    @staticmethod
    def remove_document(
        conn: sqlite3.Connection, collection_id: int, doc_id: str
    ) -> list[tuple[int, bytes]] | None:
        """Delete a document and its chunks inside a write; returns (row id, postings) removed."""
        row = conn.execute(
            "SELECT id FROM documents WHERE collection_id=? AND doc_id=?", (collection_id, doc_id)
        ).fetchone()
        if row is None:
            return None
        removed = conn.execute(
            "SELECT id, postings FROM chunks WHERE document_id=?", (row[0],)
        ).fetchall()
        conn.execute("DELETE FROM chunks WHERE document_id=?", (row[0],))
        conn.execute("DELETE FROM documents WHERE id=?", (row[0],))
        return removed

    @staticmethod
    def insert_documents(
        conn: sqlite3.Connection, collection_id: int, documents: Sequence[NewDocument]
    ) -> list[int]:
        """Insert documents and their chunks inside a write; returns the new chunk row ids.

        Row ids are allocated explicitly (safe: the write holds SQLite's write lock) so that
        every insert is one `executemany`.
        """
        doc_base = conn.execute("SELECT coalesce(max(id), 0) FROM documents").fetchone()[0] + 1
        seq = conn.execute("SELECT seq FROM sqlite_sequence WHERE name='chunks'").fetchone()
        chunk_base = (
            max(
                (seq[0] if seq else 0),
                conn.execute("SELECT coalesce(max(id), 0) FROM chunks").fetchone()[0],
            )
            + 1
        )
        now = time.time()
        doc_rows, chunk_rows = [], []
        next_chunk = chunk_base
        for i, new in enumerate(documents):
            d = new.document
            doc_rows.append(
                (
                    doc_base + i,
                    collection_id,
                    d.id,
                    d.source,
                    d.title,
                    _json(d.metadata),
                    new.content_hash,
                    d.text,
                    now,
                )
            )
            for c in new.chunks:
                chunk_rows.append(
                    (
                        next_chunk,
                        doc_base + i,
                        c.n,
                        c.text,
                        c.start,
                        c.end,
                        _json(c.metadata),
                        c.postings.to_bytes(),
                    )
                )
                next_chunk += 1
        conn.executemany(
            "INSERT INTO documents (id, collection_id, doc_id, source, title, metadata,"
            " content_hash, text, indexed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            doc_rows,
        )
        conn.executemany(
            'INSERT INTO chunks (id, document_id, n, text, start, "end", metadata, postings)'
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            chunk_rows,
        )
        return list(range(chunk_base, next_chunk))

    def document_text(self, collection_id: int, doc_id: str) -> str:
        row = (
            self._reader()
            .execute(
                "SELECT text FROM documents WHERE collection_id=? AND doc_id=?",
                (collection_id, doc_id),
            )
            .fetchone()
        )
        if row is None:
            raise NotFound(f"no document {doc_id!r}")
        return str(row[0])

    def documents(
        self, collection_id: int | None, offset: int = 0, limit: int = 100
    ) -> list[StoredDocument]:
        """A page of documents ordered by collection then id."""
        where = "" if collection_id is None else "WHERE d.collection_id = ?"
        params: tuple = () if collection_id is None else (collection_id,)
        rows = (
            self._reader()
            .execute(
                f"SELECT d.doc_id, c.name, d.source, d.title, d.metadata, d.content_hash,"
                f" (SELECT count(*) FROM chunks k WHERE k.document_id = d.id), d.indexed_at"
                f" FROM documents d JOIN collections c ON c.id = d.collection_id {where}"
                f" ORDER BY c.name, d.doc_id LIMIT ? OFFSET ?",
                (*params, limit, offset),
            )
            .fetchall()
        )
        return [
            StoredDocument(r[0], r[1], r[2], r[3], json.loads(r[4]), r[5], r[6], r[7]) for r in rows
        ]

    # -- chunks -----------------------------------------------------------------------
    def postings(self, collection_id: int) -> list[tuple[int, bytes]]:
        """(row id, postings blob) of every chunk in a collection, in insertion order."""
        return (
            self._reader()
            .execute(
                "SELECT k.id, k.postings FROM chunks k JOIN documents d ON d.id = k.document_id"
                " WHERE d.collection_id = ? ORDER BY k.id",
                (collection_id,),
            )
            .fetchall()
        )

    # -- vectors ----------------------------------------------------------------------
    def vectors(self, collection_id: int) -> tuple[list[int], list[bytes]]:
        """(row ids, float32 vector blobs) of every embedded chunk in a collection."""
        rows = (
            self._reader()
            .execute(
                "SELECT v.chunk_id, v.vector FROM vectors v JOIN chunks k ON k.id = v.chunk_id"
                " JOIN documents d ON d.id = k.document_id WHERE d.collection_id = ?"
                " ORDER BY v.chunk_id",
                (collection_id,),
            )
            .fetchall()
        )
        return [r for r, _ in rows], [v for _, v in rows]

    def cached_vectors(self, model: str, hashes: Sequence[bytes]) -> dict[bytes, bytes]:
        """Vectors already computed by `model` for texts with these hashes."""
        sql = (
            "SELECT text_hash, vector FROM embedding_cache"
            " WHERE model = ? AND text_hash IN ({marks})"
        )
        return dict(self._rows_in(self._reader(), sql, model, hashes))

    @staticmethod
    def insert_vectors(
        conn: sqlite3.Connection,
        model: str,
        rows: Sequence[int],
        hashes: Sequence[bytes],
        blobs: Sequence[bytes],
    ) -> None:
        """Store chunk vectors and remember them in the embedding cache (inside a write)."""
        conn.executemany(
            "INSERT OR REPLACE INTO vectors (chunk_id, vector) VALUES (?, ?)", zip(rows, blobs)
        )
        conn.executemany(
            "INSERT OR IGNORE INTO embedding_cache (model, text_hash, vector) VALUES (?, ?, ?)",
            ((model, h, b) for h, b in zip(hashes, blobs)),
        )

    def chunk_texts(self, collection_id: int) -> list[tuple[int, str | None, str]]:
        """(row id, document title, chunk text) of every chunk in a collection."""
        return (
            self._reader()
            .execute(
                "SELECT k.id, d.title, k.text FROM chunks k"
                " JOIN documents d ON d.id = k.document_id"
                " WHERE d.collection_id = ? ORDER BY k.id",
                (collection_id,),
            )
            .fetchall()
        )

    @staticmethod
    def clear_vectors(conn: sqlite3.Connection, collection_id: int) -> None:
        """Delete every vector of a collection (inside a write)."""
        conn.execute(
            "DELETE FROM vectors WHERE chunk_id IN (SELECT k.id FROM chunks k"
            " JOIN documents d ON d.id = k.document_id WHERE d.collection_id = ?)",
            (collection_id,),
        )

    def chunk_metadata(self, collection_id: int) -> dict[int, dict[str, Any]]:
        """Chunk row id -> metadata (the document's merged with the chunk's own)."""
        rows = (
            self._reader()
            .execute(
                "SELECT k.id, d.metadata, k.metadata FROM chunks k"
                " JOIN documents d ON d.id = k.document_id WHERE d.collection_id = ?",
                (collection_id,),
            )
            .fetchall()
        )
        cache: dict[str, dict[str, Any]] = {}
        out = {}
        for row, doc_meta, chunk_meta in rows:
            base = cache.get(doc_meta)
            if base is None:
                base = cache[doc_meta] = json.loads(doc_meta)
            out[row] = {**base, **json.loads(chunk_meta)} if chunk_meta != "{}" else base
        return out

    def chunk_documents(self, collection_id: int) -> dict[int, str]:
        """Chunk row id -> document id for a whole collection (evaluation aggregates by it)."""
        return dict(
            self._reader().execute(
                "SELECT k.id, d.doc_id FROM chunks k JOIN documents d ON d.id = k.document_id"
                " WHERE d.collection_id = ?",
                (collection_id,),
            )
        )

    def chunks_by_row(self, row_ids: Sequence[int]) -> dict[int, StoredChunk]:
        """Chunks with their documents for the given row ids (missing ids are left out)."""
        if not row_ids:
            return {}
        marks = ",".join("?" * len(row_ids))
        rows = (
            self._reader()
            .execute(
                'SELECT k.id, k.n, k.text, k.start, k."end", k.metadata, d.doc_id, d.source,'
                " d.title, d.metadata, c.name FROM chunks k"
                " JOIN documents d ON d.id = k.document_id"
                f" JOIN collections c ON c.id = d.collection_id WHERE k.id IN ({marks})",
                tuple(int(r) for r in row_ids),
            )
            .fetchall()
        )
        out = {}
        for row_id, n, text, start, end, meta, doc_id, source, title, doc_meta, coll in rows:
            metadata = {**json.loads(doc_meta), **json.loads(meta)}
            out[row_id] = StoredChunk(
                row_id, f"{doc_id}-{n}", doc_id, n, text, start, end, metadata, source, title, coll
            )
        return out

    def counts(self) -> dict[str, dict[str, int]]:
        """Documents and chunks per collection."""
        rows = (
            self._reader()
            .execute(
                "SELECT c.name, count(DISTINCT d.id), count(k.id) FROM collections c"
                " LEFT JOIN documents d ON d.collection_id = c.id"
                " LEFT JOIN chunks k ON k.document_id = d.id GROUP BY c.id ORDER BY c.name"
            )
            .fetchall()
        )
        return {name: {"documents": docs, "chunks": chunks} for name, docs, chunks in rows}
