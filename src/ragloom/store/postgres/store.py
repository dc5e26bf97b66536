"""The PostgreSQL store: the same seam as the embedded store, with the database doing the
work, so several ragloom processes on different machines share one index.

Consistency rules, in one place:
- A search reads inside one `REPEATABLE READ, READ ONLY` transaction (`snapshot()`): ranking,
  statistics, chunk text, metadata and vectors all come from that one committed version.
- A write is one transaction that first takes the schema's advisory write lock, so writers
  of every process serialize (no lost updates, no deadlocks); nothing is visible before
  COMMIT, and a failed write leaves the database as it was.
- This process keeps no copy of the index: only small caches keyed by what they depend on.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

import psycopg

from ragloom.errors import ReadInterrupted, StorageError, StoreError
from ragloom.store.base import Store, ThreadSnapshots
from ragloom.store.postgres import replicas, vectors
from ragloom.store.postgres import schema as schemas
from ragloom.store.postgres.check import check_snapshot
from ragloom.store.postgres.errors import from_psycopg
from ragloom.store.postgres.export import export_rows
from ragloom.store.postgres.hnsw import HnswBuilder
from ragloom.store.postgres.lease import advisory_lease
from ragloom.store.postgres.snapshot import PostgresSnapshot
from ragloom.store.postgres.url import Location, parse_location
from ragloom.store.postgres.write import PostgresWrite
from ragloom.store.records import CollectionInfo, NewDocument
from ragloom.store.rows import dimension_of
from ragloom.store.sql import one

CONNECT_TIMEOUT = 5  # seconds; the URL's connect_timeout wins
PENDING = (
    "SELECT c.id, d.title, c.text FROM chunks c JOIN documents d ON d.id = c.document_id"
    " WHERE c.collection_id = %s AND c.embedding IS NULL ORDER BY c.id LIMIT %s"
)
LOST_PRIMARY_WAIT = 2.0  # seconds a replica may take to apply our last write, primary down


class PostgresStore(ThreadSnapshots[PostgresSnapshot], Store):
    """A ragloom index in a PostgreSQL database (schema `location.schema`)."""

    def __init__(self, url: str, create: bool = True, read_only: bool = False) -> None:
        self.where: Location = parse_location(url)
        self.location = self.where.shown
        self.schema = self.where.schema
        self.read_only = read_only
        self._local = threading.local()
        self._conns: list[psycopg.Connection] = []
        self._conns_lock = threading.Lock()
        self._write_lock = threading.RLock()
        self._writer: psycopg.Connection | None = None
        self._closed = False
        self.filter_values: dict[Any, list[tuple[str | None, ...]]] = {}
        self.indexer = HnswBuilder(self.where, read_only)
        self.wrote = False  # this process committed a write since open (`finish`)
        self._vector_info: Any = None
        self.path_sql = f'SET LOCAL search_path TO "{self.schema}", public;'
        self.mark = replicas.WriteMark()  # this process's newest commit (read-your-writes)
        self._create = create
        self._schema_ready = False
        if read_only:
            self._check_reader()
        else:
            try:
                self._writer = self._open_writer()
            except StoreError:
                if self.where.hosts < 2:
                    raise
                self._check_reader()  # the primary is down: searches go on from replicas

    # -- connections ------------------------------------------------------------------
    def _connect(self, conninfo: str, autocommit: bool = False) -> psycopg.Connection:
        if self._closed:
            raise StoreError(f"{self.location} is closed")
        kwargs: dict[str, Any] = {"autocommit": autocommit}
        if "connect_timeout" not in conninfo:
            kwargs["connect_timeout"] = CONNECT_TIMEOUT
        conn = psycopg.connect(conninfo, **kwargs)
        self._prepare(conn)
        if not autocommit:
            conn.commit()
        with self._conns_lock:
            self._conns.append(conn)
        return conn

    def _open_writer(self) -> psycopg.Connection:
        """A connection to the primary; the schema is created or migrated on the first."""
        try:
            conn = self._connect(self.where.write)
            if not self._schema_ready:
                schemas.ensure_schema(conn, self.schema, self._create, self.location)
                self._prepare(conn)
                conn.commit()
                if self.where.hosts > 1:  # our searches wait for the schema on replicas too
                    self.mark.advance(replicas.current_lsn(conn))
                    conn.rollback()  # not idle in a transaction (CREATE INDEX waits for those)
                self._schema_ready = True
            return conn
        except psycopg.Error as exc:
            raise from_psycopg(exc, self.location) from None

    def _prepare(self, conn: psycopg.Connection) -> None:
        """Names resolve to ragloom's schema; vectors load as numpy arrays."""
        extension = schemas.vector_schema(conn)
        if extension is not None:
            schemas.set_path(conn, self.schema)
            self.path_sql = f'SET LOCAL search_path TO "{self.schema}", "{extension}";'
            self._vector_info = vectors.register(conn, self._vector_info)
        elif self._vector_info is not None:  # a replica yet to replay the extension that
            vectors.register(conn, self._vector_info)  # the primary has: the same type oid

    def _check_reader(self) -> None:
        """A search-only open: the schema must exist and be one this version reads."""
        try:
            version = schemas.stored_version(self.reader(), self.schema)
        except psycopg.Error as exc:
            raise from_psycopg(exc, self.location) from None
        if version is None:
            raise StoreError(f"{self.location} holds no ragloom index (schema {self.schema!r})")
        schemas.check_version(version, self.location)

    def reader(self) -> psycopg.Connection:
        """This thread's search connection (a replica when the URL names some)."""
        conn = getattr(self._local, "conn", None)
        if conn is None or conn.closed or conn.broken:
            conn = self._connect(self.where.read, autocommit=True)
            self._local.conn = conn
            self._local.standby = self.where.hosts > 1 and replicas.is_standby(conn)
            self._local.verified = 0  # the newest own write seen replayed there
        return conn

    def _primary_reader(self) -> psycopg.Connection:
        """This thread's search connection to the primary (when a replica lags our writes)."""
        conn = getattr(self._local, "primary", None)
        if conn is None or conn.closed or conn.broken:
            conn = self._connect(self.where.write, autocommit=True)
            self._local.primary = conn
        return conn

    def _search_connection(self) -> psycopg.Connection:
        """A connection whose data is at least as new as this process's last write."""
        conn = self.reader()
        wanted, text = self.mark.position
        if not wanted or not self._local.standby or self._local.verified >= wanted:
            return conn
        if replicas.caught_up(conn, wanted, text or "", self.where.replica_wait):
            self._local.verified = wanted
            return conn
        try:
            return self._primary_reader()
        except psycopg.Error:  # the primary is down: the replica is all there is; give it
            # time to apply what it already received, once (not at every search)
            replicas.caught_up(conn, wanted, text or "", LOST_PRIMARY_WAIT)
            self._local.verified = wanted
            return conn

    def writer(self) -> psycopg.Connection:
        if self.read_only:
            raise StorageError(
                f"{self.location} is open for search only", "open it without read_only to write"
            )
        conn = self._writer
        if conn is None or conn.closed or conn.broken:
            self._writer = None
            conn = self._writer = self._open_writer()
        return conn

    def writer_lease(self, what: str, wait: float = 0.0) -> contextlib.AbstractContextManager:
        if self.read_only:
            return contextlib.nullcontext()
        return advisory_lease(self.where.write, self.schema, self.location, what, wait)

    def close(self) -> None:
        self.indexer.stop()
        with self._write_lock, self._conns_lock:
            self._closed = True
            for conn in self._conns:
                with contextlib.suppress(Exception):
                    conn.close()
            self._conns.clear()
            self._writer = None

    # -- reading ----------------------------------------------------------------------
    # One REPEATABLE READ transaction (`ThreadSnapshots.snapshot`; nested ones share it).
    def _read_failure(self, snap: PostgresSnapshot, exc: Exception) -> Exception | None:
        if not isinstance(exc, psycopg.Error):
            return None
        self._discard(snap.conn)
        if isinstance(exc, psycopg.OperationalError) and self.where.hosts > 1:
            return ReadInterrupted(
                f"{self.location}: a database server went away during a search", "retry"
            )
        return from_psycopg(exc, self.location)

    def _end(self, snap: PostgresSnapshot) -> None:
        conn = snap.conn
        if not conn.closed and not conn.broken:
            with contextlib.suppress(psycopg.Error):
                conn.execute("COMMIT")

    def _begin(self) -> PostgresSnapshot:
        """Open a snapshot; a connection found dead is replaced once (another host)."""
        for attempt in (0, 1):
            conn = None
            try:
                conn = self._search_connection()
                try:
                    snap = PostgresSnapshot.begin(self, conn)
                except psycopg.errors.UndefinedTable:
                    if conn is not self._local.conn or self.mark.generation < 0:
                        raise
                    conn.execute("ROLLBACK")  # a replica that has not replayed our schema yet
                    conn = self._primary_reader()
                    snap = PostgresSnapshot.begin(self, conn)
                return self._fresh_enough(snap)
            except psycopg.OperationalError as exc:
                self._discard(conn)
                if attempt or self.where.hosts < 2:
                    raise from_psycopg(exc, self.location) from None
            except psycopg.Error as exc:
                self._discard(conn)
                raise from_psycopg(exc, self.location) from None
        raise AssertionError("unreachable")

    def _fresh_enough(self, snap: PostgresSnapshot) -> PostgresSnapshot:
        """A replica snapshot older than this process's last commit (its replay position
        said otherwise) is dropped for one on the primary: never a stale read."""
        if snap.generation >= self.mark.generation or snap.conn is not self._local.conn:
            return snap
        with contextlib.suppress(psycopg.Error):
            snap.conn.execute("ROLLBACK")
        self._local.verified = 0
        try:
            return PostgresSnapshot.begin(self, self._primary_reader())
        except psycopg.OperationalError:  # the primary is down: the replica is all there is
            wanted, text = self.mark.position
            conn = self.reader()
            replicas.caught_up(conn, wanted, text or "", LOST_PRIMARY_WAIT)
            self._local.verified = wanted
            return PostgresSnapshot.begin(self, conn)

    def _discard(self, conn: psycopg.Connection | None) -> None:
        """Forget a connection that failed (the next read connects anew)."""
        for name in ("conn", "primary"):
            if conn is None or getattr(self._local, name, None) is conn:
                setattr(self._local, name, None)
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()

    # -- for a shard set (`ragloom.store.shards`), which opens and commits its own way ----
    def open_snapshot(self, conn: psycopg.Connection, lead: str = "") -> PostgresSnapshot:
        """A snapshot on `conn` (from `search_connection`), newer than this process's writes;
        `lead` runs on `conn` first, in the same round trip (`PostgresSnapshot.begin`)."""
        snap = PostgresSnapshot.begin(self, conn, lead)
        fresh = self._fresh_enough(snap)
        fresh.led = snap.led
        return fresh

    def search_connection(self) -> psycopg.Connection:
        return self._search_connection()

    def discard(self, conn: psycopg.Connection | None) -> None:
        self._discard(conn)

    def control_connection(self) -> psycopg.Connection:
        """A new autocommit connection to the primary (closed with the store)."""
        return self._connect(self.where.write, autocommit=True)

    def collections(self) -> dict[str, CollectionInfo]:
        with self.snapshot() as snap:
            return snap.collections()

    # -- writing ----------------------------------------------------------------------
    @contextlib.contextmanager
    def write(self) -> Iterator[PostgresWrite]:
        with self._write_lock:
            try:
                conn = None
                conn = self.writer()
                # the row lock on the generation serializes writers of every process
                generation = int(
                    one(
                        conn.execute(
                            "UPDATE meta SET value = value + 1 WHERE key = 'generation'"
                            " RETURNING value"
                        )
                    )[0]
                )
            except psycopg.Error as exc:
                self._rollback(conn)
                raise from_psycopg(exc, self.location) from None
            write = PostgresWrite(self.indexer, conn, generation)
            try:
                yield write
                write.finish()
                conn.commit()
                if self.where.hosts > 1:
                    self.mark.advance(replicas.current_lsn(conn), generation)
                    conn.rollback()  # not idle in a transaction (CREATE INDEX waits for those)
            except psycopg.Error as exc:
                self._rollback(conn)
                raise from_psycopg(exc, self.location) from None
            except BaseException:
                self._rollback(conn)
                raise
        self.wrote = True
        if write.grown:
            self.indexer.nudge(write.grown)

    def _rollback(self, conn: psycopg.Connection | None) -> None:
        if conn is None:
            return
        try:
            conn.rollback()
        except psycopg.Error:
            with contextlib.suppress(Exception):
                conn.close()
            self._writer = None

    # -- helpers the engine uses ------------------------------------------------------
    def pending(self, collection: CollectionInfo, limit: int) -> list[tuple[int, str | None, str]]:
        if self.where.hosts > 1:  # backfill works from the primary's own view
            try:
                return self._primary_reader().execute(PENDING, (collection.id, limit)).fetchall()
            except psycopg.Error as exc:
                raise from_psycopg(exc, self.location) from None
        with self.snapshot() as snap:
            return snap.conn.execute(PENDING, (collection.id, limit)).fetchall()

    def chunk_texts(self, collection: CollectionInfo) -> list[tuple[int, str | None, str]]:
        with self.snapshot() as snap:
            return snap.chunk_texts(collection)

    def export(self, collection: str, batch: int = 200) -> Iterator[list[NewDocument]]:
        with self.snapshot() as snap:
            yield from export_rows(snap.conn, snap.rows[collection].id, batch)

    def replication(self) -> list[dict[str, Any]] | None:
        """Each server of a multi-host URL with its role and replay lag (None: one host)."""
        if self.where.hosts < 2:
            return None
        return replicas.replication_status(self.where.read)

    def check(self) -> list[str]:
        with self.snapshot() as snap:
            return check_snapshot(snap)

    def finish(self, on_step: Any = None) -> int:
        """The HNSW indexes this process's writes made due, built before close."""
        return self.maintain(on_step=on_step) if self.wrote else 0

    def maintain(self, wait: bool = True, on_step: Any = None) -> int:
        """Build the HNSW indexes that collections past the threshold still lack."""
        try:
            with self.snapshot() as snap:
                grown = {
                    row.id: (row.vectors, int(dimension_of(row.config) or 0))
                    for row in snap.rows.values()
                }
            self.indexer.run_now(grown)
            return 0
        except psycopg.Error as exc:
            raise from_psycopg(exc, self.location) from None


def open_postgres(url: str, create: bool = True, read_only: bool = False) -> PostgresStore:
    """`open_store`'s entry point for postgresql:// and postgres:// URLs."""
    return PostgresStore(url, create=create, read_only=read_only)
