"""HNSW indexes for collections past a size threshold, built in the background.

Each collection gets a partial expression index over its own vectors
(`embedding::vector(D)` with `vector_ip_ops`, `WHERE collection_id = C`), since collections
may hold vectors of different dimensions. It is built with `CREATE INDEX CONCURRENTLY`
after the write that crossed the threshold, so writers and readers never wait for it;
until it is valid, searches are exact.
"""

from __future__ import annotations

import contextlib
import threading
import time

import psycopg
from psycopg import sql

from ragloom.store.postgres.schema import set_path
from ragloom.store.postgres.url import Location

NEGATIVE_TTL = 5.0  # seconds a "no index yet" answer is trusted


def index_name(collection_id: int, dimension: int) -> str:
    return f"chunks_hnsw_{collection_id}_{dimension}"


class HnswBuilder:
    """Knows which collections have a valid HNSW index and builds the missing ones."""

    def __init__(self, where: Location, read_only: bool) -> None:
        self.where = where
        self.schema = where.schema
        self.read_only = read_only
        self._known: dict[tuple[int, int], float] = {}  # -> 0.0 valid, else time of "none"
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._todo: dict[int, tuple[int, int]] = {}

    def has_index(self, conn: psycopg.Connection, collection_id: int, dimension: int) -> bool:
        key = (collection_id, dimension)
        seen = self._known.get(key)
        if seen == 0.0:
            return True
        if seen is not None and time.monotonic() - seen < NEGATIVE_TTL:
            return False
        found = conn.execute(
            "SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
            " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s"
            " AND c.relname = %s",
            (self.schema, index_name(collection_id, dimension)),
        ).fetchone()
        valid = bool(found and found[0])
        self._known[key] = 0.0 if valid else time.monotonic()
        return valid

    def forget(self, collection_id: int) -> None:
        for key in [k for k in self._known if k[0] == collection_id]:
            self._known.pop(key, None)

    def nudge(self, grown: dict[int, tuple[int, int]]) -> None:
        """After a commit: collections (id -> (vectors, dimension)) that gained vectors."""
        threshold = self.where.hnsw_threshold
        due = {c: v for c, v in grown.items() if v[0] >= threshold and v[1]}
        due = {c: v for c, v in due.items() if self._known.get((c, v[1])) != 0.0}
        if not due:
            return
        with self._lock:
            self._todo.update(due)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, daemon=True, name="hnsw")
                self._thread.start()

    def _run(self) -> None:
        while True:
            with self._lock:
                if not self._todo:
                    self._thread = None
                    return
                collection_id, (_, dimension) = self._todo.popitem()
            with contextlib.suppress(psycopg.Error, Exception):
                self.build(collection_id, dimension)

    def build(self, collection_id: int, dimension: int) -> None:
        """CREATE INDEX CONCURRENTLY (idempotent; an invalid leftover is rebuilt)."""
        name = index_name(collection_id, dimension)
        conn = psycopg.connect(self.where.write, autocommit=True)
        try:
            set_path(conn, self.schema)
            found = conn.execute(
                "SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
                " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s"
                " AND c.relname = %s",
                (self.schema, name),
            ).fetchone()
            if found is not None and not found[0]:
                conn.execute(sql.SQL("DROP INDEX CONCURRENTLY {}").format(sql.Identifier(name)))
            conn.execute("SET maintenance_work_mem = '256MB'")
            conn.execute(
                sql.SQL(
                    "CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON chunks USING hnsw"
                    " ((embedding::vector({d})) vector_ip_ops) WITH (m = 16, ef_construction = 128)"
                    " WHERE collection_id = {c} AND embedding IS NOT NULL"
                ).format(
                    name=sql.Identifier(name),
                    d=sql.Literal(dimension),
                    c=sql.Literal(collection_id),
                )
            )
            self._known[(collection_id, dimension)] = 0.0
        finally:
            conn.close()

    def run_now(self, grown: dict[int, tuple[int, int]]) -> None:
        """Build, in this thread, the indexes due for collections (id -> (vectors,
        dimension)) as a snapshot counts them."""
        thread = self._thread
        if thread is not None:
            thread.join()
        if self.read_only:
            return
        for collection_id, (count, dimension) in grown.items():
            if dimension and count >= self.where.hnsw_threshold:
                self.build(collection_id, dimension)

    def stop(self) -> None:
        thread = self._thread
        if thread is not None:
            thread.join(timeout=60)
