"""Reading one committed version of a PostgreSQL index: everything a search needs comes
from one REPEATABLE READ transaction, scored by the database."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import psycopg
from psycopg import sql

from ragloom.config import CollectionConfig
from ragloom.errors import NotFound
from ragloom.store.base import CollectionReader, DenseQuery, LexicalQuery, Ranked
from ragloom.store.document_text import text_hash
from ragloom.store.postgres import leg_sql, where
from ragloom.store.postgres.hnsw import HnswBuilder
from ragloom.store.records import CollectionInfo, StoredChunk, StoredDocument
from ragloom.store.sql import POSTGRES, CollectionRow, SQLSnapshot, one


@dataclass(frozen=True)
class PostgresCollectionRow(CollectionRow):
    """A collection's row as one snapshot sees it, with its live-chunk statistics."""

    chunks: int
    total_length: int
    vectors: int
    changed: int


CHUNK_COLUMNS = (
    'k.id, k.n, k.text, k.start, k."end", k.metadata, d.doc_id, d.source, d.title, c.name'
)
CHUNK_JOINS = (
    " JOIN documents d ON d.id = k.document_id JOIN collections c ON c.id = d.collection_id"
)


def stored_chunk(r: Sequence[Any]) -> StoredChunk:
    """A chunk from a row of `CHUNK_COLUMNS`."""
    return StoredChunk(r[0], f"{r[6]}-{r[1]}", r[6], r[1], r[2], r[3], r[4], r[5], *r[7:10])


BEGIN = (
    "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; {path}"
    " SELECT m.value, c.id, c.name, c.config, c.chunks, c.total_length, c.vectors, c.changed"
    " FROM meta m LEFT JOIN collections c ON true WHERE m.key = 'generation'"
)


def with_chunks(
    conn: psycopg.Connection, query: sql.Composable, values: dict[str, Any]
) -> list[tuple[int, float, StoredChunk]]:
    """A ranking statement's (chunk_id, score) rows, best first, each with its chunk read in
    the same statement (a shard set's top k: its hits need no round trip of their own)."""
    statement = sql.SQL(
        "WITH top AS ({}) SELECT {}, top.score FROM top JOIN chunks k ON k.id = top.chunk_id{}"
        " ORDER BY top.score DESC, k.id"
    ).format(query, sql.SQL(CHUNK_COLUMNS), sql.SQL(CHUNK_JOINS))
    records = conn.execute(statement, values).fetchall()
    return [(r[0], r[-1], stored_chunk(r[:-1])) for r in records]


class PostgresCollection(CollectionReader):
    """One collection of a snapshot; both legs run in SQL."""

    def __init__(self, snapshot: PostgresSnapshot, row: PostgresCollectionRow) -> None:
        self.snapshot = snapshot
        self.row = row
        self.info = CollectionInfo(row.id, row.name, row.config)
        self.config = CollectionConfig.from_dict(row.config)

    @property
    def conn(self) -> psycopg.Connection:
        return self.snapshot.conn

    def lexical(self, query: LexicalQuery, k: int) -> Ranked:
        return leg_sql.lexical(self, query.terms, k, query.params, query.where, query.weights)

    def document_frequencies(self, terms: Sequence[str]) -> tuple[dict[str, int], int]:
        return leg_sql.document_frequencies(self, terms)

    def dense(self, query: DenseQuery, k: int) -> Ranked:
        return leg_sql.dense(self, query.vector, k, query.where)

    def metadata(self, rows: Sequence[int]) -> dict[int, dict[str, Any]]:
        if not len(rows):
            return {}
        return dict(
            self.conn.execute(
                "SELECT id, metadata FROM chunks WHERE id = ANY(%s) AND collection_id = %s",
                ([int(r) for r in rows], self.row.id),
            ).fetchall()
        )

    def vectors(self, rows: Sequence[int]) -> np.ndarray:
        dimension = int((self.row.config.get("embedding") or {}).get("dimension") or 0)
        out = np.zeros((len(rows), dimension), np.float32)
        if not len(rows) or not dimension:
            return out
        wanted = [int(r) for r in rows]
        found: dict[int, Any] = dict(
            self.conn.cursor(binary=True)
            .execute(
                "SELECT id, embedding FROM chunks WHERE id = ANY(%s) AND embedding IS NOT NULL",
                (wanted,),
            )
            .fetchall()
        )
        for i, row in enumerate(wanted):
            vector = found.get(row)
            if vector is not None and len(vector) == dimension:
                out[i] = vector
        return out

    def counts(self) -> dict[str, Any]:
        row = self.row
        documents, terms = one(
            self.conn.execute(
                "SELECT (SELECT count(*) FROM documents WHERE collection_id = %(c)s),"
                " (SELECT count(*) FROM term_stats WHERE collection_id = %(c)s AND df > 0)",
                {"c": row.id},
            )
        )
        embedded = bool(row.config.get("embedding"))
        return {
            "documents": int(documents),
            "chunks": row.chunks,
            "vectors": row.vectors,
            "pending": row.chunks - row.vectors if embedded else 0,
            "terms": int(terms),
            "avg_chunk_terms": round(row.total_length / row.chunks, 2) if row.chunks else 0.0,
        }

    def size(self) -> int:
        return self.row.chunks

    def pending(self) -> int:
        return self.row.chunks - self.row.vectors if self.row.config.get("embedding") else 0

    def field_values(self, key: str) -> list[Any]:
        cache = self.snapshot.store.filter_values
        return where.field_values(self.conn, self.row.id, self.row.changed, key, cache)

    def chunk_documents(self) -> dict[int, str]:
        return dict(
            self.conn.execute(
                "SELECT c.id, d.doc_id FROM chunks c JOIN documents d ON d.id = c.document_id"
                " WHERE c.collection_id = %s",
                (self.row.id,),
            ).fetchall()
        )


class SnapshotSource(Protocol):
    """What a snapshot reads of the store that opens it (`PostgresStore`): where it is, the
    search path its transactions set, the filter values it caches per collection version,
    and which collections have an HNSW index."""

    location: str
    path_sql: str
    filter_values: dict[Any, list[tuple[str | None, ...]]]
    indexer: HnswBuilder


class PostgresSnapshot(SQLSnapshot[PostgresCollectionRow]):
    """An open REPEATABLE READ transaction on a reader connection."""

    dialect = POSTGRES

    def __init__(
        self,
        store: SnapshotSource,
        conn: psycopg.Connection,
        generation: int,
        rows: dict[str, PostgresCollectionRow],
    ) -> None:
        super().__init__(store.location, conn, generation, rows)
        self.store = store
        self.led: tuple[Any, ...] | None = None
        self._readers: dict[str, PostgresCollection] = {}

    @classmethod
    def begin(
        cls, store: SnapshotSource, conn: psycopg.Connection, lead: str = ""
    ) -> PostgresSnapshot:
        """Open the transaction and read the generation and collections: one round trip.
        `lead`, a statement run just before the transaction in the same round trip (a shard
        set's commit lock), leaves its first row in `led`."""
        # the search path is set again in every snapshot: a server caches a path naming a
        # schema that did not exist yet (a replica that connected before it replayed it)
        statement = BEGIN.format(path=store.path_sql)
        led = None
        if lead:
            cursor = conn.execute(f"{lead}; COMMIT; {statement}")
            led = cursor.fetchone()
            cursor.nextset()  # past the lead's result
            cursor.nextset()  # and COMMIT's (which ends the lead's implicit transaction)
        else:
            cursor = conn.execute(statement)
        cursor.nextset()  # past BEGIN's result
        cursor.nextset()  # and SET's, to the SELECT's
        records = cursor.fetchall()
        if not records:
            raise psycopg.errors.UndefinedTable("meta is empty")
        rows = {r[2]: PostgresCollectionRow(*r[1:]) for r in records if r[1] is not None}
        snap = cls(store, conn, int(records[0][0]), rows)
        snap.led = led
        return snap

    def collections(self) -> dict[str, CollectionInfo]:
        return {n: CollectionInfo(r.id, r.name, r.config) for n, r in self.rows.items()}

    def collection(self, name: str) -> PostgresCollection:
        reader = self._readers.get(name)
        if reader is None:
            row = self.rows.get(name)
            if row is None:
                raise self.unknown(name)
            reader = self._readers[name] = PostgresCollection(self, row)
        return reader

    def document_vectors(
        self, collection: CollectionInfo, doc_ids: Sequence[str], wanted: set[bytes]
    ) -> dict[bytes, np.ndarray]:
        found: dict[bytes, np.ndarray] = {}
        rows = self.conn.cursor(binary=True).execute(
            "SELECT d.title, c.text, c.embedding FROM chunks c JOIN documents d"
            " ON d.id = c.document_id WHERE d.collection_id = %s AND d.doc_id = ANY(%s)"
            " AND c.embedding IS NOT NULL",
            (collection.id, list(doc_ids)),
        )
        for title, text, vector in rows:
            h = text_hash(title, text)
            if h in wanted:
                found[h] = np.asarray(vector, np.float32)
        return found

    def chunks(self, rows: Sequence[int]) -> dict[int, StoredChunk]:
        if not len(rows):
            return {}
        records = self.conn.execute(
            f"SELECT {CHUNK_COLUMNS} FROM chunks k{CHUNK_JOINS} WHERE k.id = ANY(%s)",
            ([int(r) for r in rows],),
        ).fetchall()
        return {r[0]: stored_chunk(r) for r in records}

    def documents(
        self, collection: str | None, offset: int = 0, limit: int = 100
    ) -> list[StoredDocument]:
        where, params = "", {"limit": limit, "offset": offset}
        if collection is not None:
            row = self.rows.get(collection)
            if row is None:
                raise NotFound(f"no collection {collection!r} in {self.location}")
            where, params["c"] = "WHERE d.collection_id = %(c)s", row.id
        records = self.conn.execute(
            "SELECT d.doc_id, c.name, d.source, d.title, d.metadata, d.content_hash,"
            " (SELECT count(*) FROM chunks k WHERE k.document_id = d.id), d.indexed_at,"
            " (SELECT count(*) FROM chunks k WHERE k.document_id = d.id"
            "  AND k.embedding IS NULL)"
            f" FROM documents d JOIN collections c ON c.id = d.collection_id {where}"
            " ORDER BY c.name, d.doc_id LIMIT %(limit)s OFFSET %(offset)s",
            params,
        ).fetchall()
        out = []
        for r in records:
            embedded = bool(self.rows[r[1]].config.get("embedding"))
            pending = int(r[8]) if embedded else 0
            out.append(StoredDocument(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], pending))
        return out

    def document_counts(self) -> dict[str, dict[str, int]]:
        records = self.conn.execute(
            "SELECT c.name, (SELECT count(*) FROM documents d WHERE d.collection_id = c.id),"
            " c.chunks FROM collections c ORDER BY c.name"
        ).fetchall()
        return {name: {"documents": int(d), "chunks": int(k)} for name, d, k in records}
