"""Reading one committed version of a PostgreSQL index: everything a search needs comes
from one REPEATABLE READ transaction, scored by the database."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import psycopg
from psycopg import sql

from ragloom.config import CollectionConfig
from ragloom.errors import NotFound
from ragloom.filters import FilterNode
from ragloom.lexical.bm25 import BM25Params
from ragloom.store.base import CollectionReader, Snapshot
from ragloom.store.postgres import legs, where
from ragloom.store.records import CollectionInfo, StoredChunk, StoredDocument
from ragloom.store.rows import parse_config
from ragloom.store.text import rebuild_text, text_hash


@dataclass(frozen=True)
class CollectionRow:
    """A collection's row as one snapshot sees it (with its live-chunk statistics)."""

    id: int
    name: str
    config_json: str
    chunks: int
    total_length: int
    vectors: int
    changed: int

    @property
    def config(self) -> dict[str, Any]:
        return parse_config(self.config_json)


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

    def __init__(self, snapshot: PostgresSnapshot, row: CollectionRow) -> None:
        self.snapshot = snapshot
        self.row = row
        self.info = CollectionInfo(row.id, row.name, row.config)
        self.config = CollectionConfig.from_dict(row.config)

    @property
    def conn(self) -> psycopg.Connection:
        return self.snapshot.conn

    def lexical(
        self,
        terms: Sequence[str],
        k: int,
        params: BM25Params,
        where: FilterNode | None = None,
        where_key: str | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        return legs.lexical(self, terms, k, params, where)

    def lexical_weighted(
        self,
        terms: Sequence[str],
        weights: Sequence[float],
        k: int,
        params: BM25Params,
        where: FilterNode | None = None,
        where_key: str | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        return legs.lexical(self, terms, k, params, where, weights)

    def document_frequencies(self, terms: Sequence[str]) -> tuple[dict[str, int], int]:
        return legs.document_frequencies(self, terms)

    def dense(
        self,
        vector: np.ndarray,
        k: int,
        where: FilterNode | None = None,
        where_key: str | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        return legs.dense(self, vector, k, where)

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
        found = dict(
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
        documents, terms = self.conn.execute(
            "SELECT (SELECT count(*) FROM documents WHERE collection_id = %(c)s),"
            " (SELECT count(*) FROM term_stats WHERE collection_id = %(c)s AND df > 0)",
            {"c": row.id},
        ).fetchone()
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


class PostgresSnapshot(Snapshot):
    """An open REPEATABLE READ transaction on a reader connection."""

    def __init__(
        self, store: Any, conn: psycopg.Connection, generation: int, rows: dict[str, CollectionRow]
    ) -> None:
        self.store = store
        self.conn = conn
        self.generation = generation
        self.rows = rows
        self.led: tuple[Any, ...] | None = None
        self._readers: dict[str, PostgresCollection] = {}

    @classmethod
    def begin(cls, store: Any, conn: psycopg.Connection, lead: str = "") -> PostgresSnapshot:
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
        rows = {r[2]: CollectionRow(*r[1:]) for r in records if r[1] is not None}
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
                raise NotFound(
                    f"no collection {name!r} in {self.store.location}",
                    f"known collections: {', '.join(sorted(self.rows)) or 'none yet'}",
                )
            reader = self._readers[name] = PostgresCollection(self, row)
        return reader

    def content_hashes(self, collection: str, doc_ids: Sequence[str]) -> dict[str, str]:
        row = self.rows.get(collection)
        if row is None or not doc_ids:
            return {}
        return dict(
            self.conn.execute(
                "SELECT doc_id, content_hash FROM documents"
                " WHERE collection_id = %s AND doc_id = ANY(%s)",
                (row.id, list(doc_ids)),
            ).fetchall()
        )

    def file_ids_by_source(self, collection: str, sources: Sequence[str]) -> dict[str, list[str]]:
        row = self.rows.get(collection)
        if row is None or not sources:
            return {}
        found: dict[str, list[str]] = {}
        for source, doc_id in self.conn.execute(
            "SELECT source, doc_id FROM documents WHERE collection_id = %s AND source = ANY(%s)"
            " AND (metadata->>'path' = doc_id"
            " OR metadata->>'path' || '#' || (metadata->>'part') = doc_id)",
            (row.id, list(sources)),
        ):
            found.setdefault(source, []).append(doc_id)
        return found

    def file_documents_under(self, collection: str, folder: str) -> dict[str, str]:
        row = self.rows.get(collection)
        if row is None:
            return {}
        return dict(
            self.conn.execute(
                "SELECT doc_id, source FROM documents WHERE collection_id = %s"
                " AND starts_with(source, %s) AND (metadata->>'path' = doc_id"
                " OR metadata->>'path' || '#' || (metadata->>'part') = doc_id)",
                (row.id, folder.rstrip("/") + "/"),
            )
        )

    def sources_of(self, collection: str, doc_ids: Sequence[str]) -> dict[str, str | None]:
        row = self.rows.get(collection)
        if row is None or not doc_ids:
            return {}
        return dict(
            self.conn.execute(
                "SELECT doc_id, source FROM documents"
                " WHERE collection_id = %s AND doc_id = ANY(%s)",
                (row.id, list(doc_ids)),
            ).fetchall()
        )

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

    def cached_vectors(self, model: str, hashes: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        cached = self.conn.cursor(binary=True).execute(
            "SELECT text_hash, vector FROM vector_cache WHERE model = %s AND text_hash = ANY(%s)",
            (model, list(hashes)),
        )
        return {bytes(h): np.asarray(v, np.float32) for h, v in cached}

    def chunks(self, rows: Sequence[int]) -> dict[int, StoredChunk]:
        if not len(rows):
            return {}
        records = self.conn.execute(
            f"SELECT {CHUNK_COLUMNS} FROM chunks k{CHUNK_JOINS} WHERE k.id = ANY(%s)",
            ([int(r) for r in rows],),
        ).fetchall()
        return {r[0]: stored_chunk(r) for r in records}

    def document_text(self, collection: str, doc_id: str) -> str:
        row = self.rows.get(collection)
        found = None
        if row is not None:
            found = self.conn.execute(
                "SELECT id, length, gaps FROM documents WHERE collection_id = %s AND doc_id = %s",
                (row.id, doc_id),
            ).fetchone()
        if found is None:
            raise NotFound(f"no document {doc_id!r} in collection {collection!r}")
        document, length, gaps = found
        chunks = self.conn.execute(
            "SELECT start, text FROM chunks WHERE document_id = %s", (document,)
        ).fetchall()
        return rebuild_text(gaps, chunks, length)

    def documents(
        self, collection: str | None, offset: int = 0, limit: int = 100
    ) -> list[StoredDocument]:
        where, params = "", {"limit": limit, "offset": offset}
        if collection is not None:
            row = self.rows.get(collection)
            if row is None:
                raise NotFound(f"no collection {collection!r} in {self.store.location}")
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
            out.append(StoredDocument(*r[:8], pending=int(r[8]) if embedded else 0))
        return out

    def document_counts(self) -> dict[str, dict[str, int]]:
        records = self.conn.execute(
            "SELECT c.name, (SELECT count(*) FROM documents d WHERE d.collection_id = c.id),"
            " c.chunks FROM collections c ORDER BY c.name"
        ).fetchall()
        return {name: {"documents": int(d), "chunks": int(k)} for name, d, k in records}
