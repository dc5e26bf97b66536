"""What the two SQL stores share, written once: a collection's row, and the statements over
documents and collections that read the same in SQLite and in PostgreSQL. They run through
a `Dialect`, which holds the one difference between the two: how a parameter and a list of
values are written (and run: SQLite's lists go in slices under its parameter limit), how a
JSON field of a text column is read, and how a stored vector comes back."""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np

from ragloom.errors import NotFound, StoreError
from ragloom.store.base import Snapshot, Write
from ragloom.store.document_text import rebuild_text
from ragloom.store.records import CollectionInfo
from ragloom.store.rows import VECTOR_CACHE_LIMIT, parse_config

SLICE = 500  # values per SQLite `IN (...)` list, under its parameter limit


def one(cursor: Any) -> tuple[Any, ...]:
    """The row of a statement that always returns one (an aggregate, a function's value)."""
    row = cursor.fetchone()
    if row is None:
        raise StoreError("a statement that returns one row returned none")
    return tuple(row)


def sliced(items: Sequence[Any], size: int = SLICE) -> Iterable[Sequence[Any]]:
    """`items` in slices of at most `size`."""
    for i in range(0, len(items), size):
        yield items[i : i + size]


class Dialect(ABC):
    """How one database writes a statement's parameters and runs it. A statement shared by
    both stores writes `{p}` for a parameter and `{keys}` for "is one of these values"."""

    mark: str  # a parameter

    def run(self, conn: Any, sql: str, params: Sequence[Any] = ()) -> Any:
        """Execute `sql` (`{p}` for each of `params`); its cursor."""
        return conn.execute(sql.format(p=self.mark), tuple(params))

    def rows(self, conn: Any, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Every row of `sql` (`{p}` for each of `params`)."""
        return self.run(conn, sql, params).fetchall()

    @abstractmethod
    def rows_in(
        self, conn: Any, sql: str, first: Sequence[Any], keys: Sequence[Any], binary: bool = False
    ) -> list[tuple[Any, ...]]:
        """Every row of `sql` whose `{keys}` is one of `keys` (its last parameter, after
        `first`); `binary` reads vectors in binary (PostgreSQL)."""

    @abstractmethod
    def json_text(self, column: str, key: str) -> str:
        """The SQL that reads `key` of the JSON object a text column holds, as text."""

    @abstractmethod
    def vector(self, stored: Any) -> np.ndarray:
        """A stored vector as float32."""


class SQLiteDialect(Dialect):
    mark = "?"

    def rows_in(
        self, conn: Any, sql: str, first: Sequence[Any], keys: Sequence[Any], binary: bool = False
    ) -> list[tuple[Any, ...]]:
        out: list[tuple[Any, ...]] = []
        for part in sliced(list(keys)):
            statement = sql.format(p="?", keys=f"IN ({','.join('?' * len(part))})")
            out.extend(conn.execute(statement, (*first, *part)).fetchall())
        return out

    def json_text(self, column: str, key: str) -> str:
        return f"json_extract({column}, '$.{key}')"

    def vector(self, stored: Any) -> np.ndarray:
        return np.frombuffer(stored, np.float32)


class PostgresDialect(Dialect):
    mark = "%s"

    def rows_in(
        self, conn: Any, sql: str, first: Sequence[Any], keys: Sequence[Any], binary: bool = False
    ) -> list[tuple[Any, ...]]:
        cursor = conn.cursor(binary=True) if binary else conn
        statement = sql.format(p="%s", keys="= ANY(%s)")
        return cursor.execute(statement, (*first, list(keys))).fetchall()

    def json_text(self, column: str, key: str) -> str:
        return f"({column}->>'{key}')"

    def vector(self, stored: Any) -> np.ndarray:
        return np.asarray(stored, np.float32)


SQLITE, POSTGRES = SQLiteDialect(), PostgresDialect()


@dataclass(frozen=True)
class CollectionRow:
    """A collection's row as one snapshot sees it (each store adds its own columns)."""

    id: int
    name: str
    config_json: str

    @property
    def config(self) -> dict[str, Any]:
        """The stored configuration (parsed once per distinct text; do not modify it)."""
        return parse_config(self.config_json)


RowT = TypeVar("RowT", bound=CollectionRow)


class SQLSnapshot(Snapshot, Generic[RowT]):
    """The document lookups of a snapshot of either SQL store, in the same statements."""

    dialect: Dialect

    def __init__(self, location: str, conn: Any, generation: int, rows: Mapping[str, RowT]):
        self.location = location
        self.conn = conn
        self.generation = generation
        self.rows = rows

    def unknown(self, name: str) -> NotFound:
        """The error for a collection this snapshot does not hold."""
        return NotFound(
            f"no collection {name!r} in {self.location}",
            f"known collections: {', '.join(sorted(self.rows)) or 'none yet'}",
        )

    def _in_collection(self, sql: str, name: str, keys: Sequence[Any]) -> list[tuple[Any, ...]]:
        """Rows of `sql` (collection id, then `{keys}`) in the collection `name`."""
        row = self.rows.get(name)
        if row is None or not keys:
            return []
        return self.dialect.rows_in(self.conn, sql, [row.id], list(keys))

    def content_hashes(self, collection: str, doc_ids: Sequence[str]) -> dict[str, str]:
        sql = (
            "SELECT doc_id, content_hash FROM documents WHERE collection_id = {p} AND doc_id {keys}"
        )
        return dict(self._in_collection(sql, collection, doc_ids))

    def sources_of(self, collection: str, doc_ids: Sequence[str]) -> dict[str, str | None]:
        sql = "SELECT doc_id, source FROM documents WHERE collection_id = {p} AND doc_id {keys}"
        return dict(self._in_collection(sql, collection, doc_ids))

    def file_ids_by_source(self, collection: str, sources: Sequence[str]) -> dict[str, list[str]]:
        path = self.dialect.json_text("metadata", "path")
        part = self.dialect.json_text("metadata", "part")
        sql = (
            "SELECT source, doc_id FROM documents WHERE collection_id = {p} AND source {keys}"
            f" AND ({path} = doc_id OR {path} || '#' || {part} = doc_id)"
        )
        found: dict[str, list[str]] = {}
        for source, doc_id in self._in_collection(sql, collection, sources):
            found.setdefault(source, []).append(doc_id)
        return found

    def file_documents_under(self, collection: str, folder: str) -> dict[str, str]:
        row = self.rows.get(collection)
        if row is None:
            return {}
        path = self.dialect.json_text("metadata", "path")
        part = self.dialect.json_text("metadata", "part")
        prefix = folder.rstrip("/") + "/"
        sql = (
            "SELECT doc_id, source FROM documents WHERE collection_id = {p}"
            " AND substr(source, 1, {p}) = {p}"
            f" AND ({path} = doc_id OR {path} || '#' || {part} = doc_id)"
        )
        return dict(self.dialect.rows(self.conn, sql, (row.id, len(prefix), prefix)))

    def chunk_counts(self, collection: str, doc_ids: Sequence[str]) -> dict[str, int]:
        sql = (
            "SELECT d.doc_id, count(k.id) FROM documents d LEFT JOIN chunks k"
            " ON k.document_id = d.id WHERE d.collection_id = {p} AND d.doc_id {keys}"
            " GROUP BY d.id"
        )
        return {doc: int(n) for doc, n in self._in_collection(sql, collection, doc_ids)}

    def chunk_texts(self, collection: CollectionInfo) -> list[tuple[int, str | None, str]]:
        """Every chunk of a collection: (row id, document title, chunk text), by row."""
        return self.dialect.rows(
            self.conn,
            "SELECT c.id, d.title, c.text FROM chunks c JOIN documents d ON d.id = c.document_id"
            " WHERE c.collection_id = {p} ORDER BY c.id",
            (collection.id,),
        )

    def cached_vectors(self, model: str, hashes: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        sql = "SELECT text_hash, vector FROM vector_cache WHERE model = {p} AND text_hash {keys}"
        cached = self.dialect.rows_in(self.conn, sql, [model], list(hashes), binary=True)
        return {bytes(h): self.dialect.vector(v) for h, v in cached}

    def document_text(self, collection: str, doc_id: str) -> str:
        row = self.rows.get(collection)
        found = []
        if row is not None:
            found = self.dialect.rows(
                self.conn,
                "SELECT id, length, gaps FROM documents WHERE collection_id = {p} AND doc_id = {p}",
                (row.id, doc_id),
            )
        if not found:
            raise NotFound(f"no document {doc_id!r} in collection {collection!r}")
        document, length, gaps = found[0]
        chunks = self.dialect.rows(
            self.conn, "SELECT start, text FROM chunks WHERE document_id = {p}", (document,)
        )
        return rebuild_text(gaps, chunks, length)


class SQLWrite(Write):
    """The statements a write of either SQL store runs alike: a collection found or created,
    its configuration read once per write, the documents a write replaces."""

    dialect: Dialect
    conn: Any
    touched: set[int]
    _configs: dict[int, dict[str, Any]]

    def ensure_collection(self, name: str, config: dict[str, Any]) -> CollectionInfo:
        found = self.dialect.rows(
            self.conn, "SELECT id, config FROM collections WHERE name = {p}", (name,)
        )
        if found:
            return CollectionInfo(int(found[0][0]), name, json.loads(found[0][1]))
        new = self.insert_collection(name, config)
        self.touched.add(new)
        return CollectionInfo(new, name, config)

    @abstractmethod
    def insert_collection(self, name: str, config: dict[str, Any]) -> int:
        """Add a collection's row; its id."""

    def stored_config(self, collection: CollectionInfo) -> dict[str, Any]:
        """The collection's configuration as this write has it."""
        config = self._configs.get(collection.id)
        if config is None:
            found = self.dialect.rows(
                self.conn, "SELECT config FROM collections WHERE id = {p}", (collection.id,)
            )
            config = self._configs[collection.id] = json.loads(found[0][0])
        return config

    def content_hashes(self, collection: CollectionInfo, doc_ids: Sequence[str]) -> dict[str, str]:
        sql = (
            "SELECT doc_id, content_hash FROM documents WHERE collection_id = {p} AND doc_id {keys}"
        )
        return dict(self.dialect.rows_in(self.conn, sql, [collection.id], doc_ids))

    def trim_vector_cache(self) -> None:
        """Keep the newest `VECTOR_CACHE_LIMIT` vectors of deleted chunks."""
        self.dialect.run(
            self.conn,
            "DELETE FROM vector_cache WHERE id <= (SELECT max(id) FROM vector_cache) - {p}",
            (VECTOR_CACHE_LIMIT,),
        )

    def document_rows(self, collection: CollectionInfo, doc_ids: Sequence[str]) -> list[int]:
        """The row ids of the stored documents among `doc_ids` (those a put replaces)."""
        sql = "SELECT id FROM documents WHERE collection_id = {p} AND doc_id {keys}"
        return [int(r[0]) for r in self.dialect.rows_in(self.conn, sql, [collection.id], doc_ids)]
