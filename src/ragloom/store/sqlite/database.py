"""One open index file: its connections, its read snapshots and write transactions, and the
views kept in step with them (what the store, its maintenance and its repairs all use).

Consistency rules, in one place:
- A search reads inside a read transaction and uses the views of exactly that transaction's
  generation (`ViewHistory.at`), so ranking and chunk text come from one committed version.
- A write runs in one `BEGIN IMMEDIATE` transaction; the views it changes are published only
  after COMMIT succeeded (`_publish`): a failed write leaves file and memory as they were.
- Readers never take the write lock, at open included; a read-only file opens for search.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

from ragloom.dense.graph import attach_graph
from ragloom.errors import StorageError, StoreError
from ragloom.segments.merge_memory import compact_memory
from ragloom.segments.persist import SegmentFiles, SegmentMissing
from ragloom.segments.view import Part
from ragloom.store.base import ThreadSnapshots
from ragloom.store.records import CollectionInfo
from ragloom.store.sqlite import connect as connecting
from ragloom.store.sqlite.errors import from_sqlite
from ragloom.store.sqlite.snapshot import SQLiteSnapshot
from ragloom.store.sqlite.view_history import SQLiteCollectionRow, ViewHistory, read_collections
from ragloom.store.sqlite.vocabulary import NumberedTerms, TermCache
from ragloom.store.sqlite.write import SQLiteWrite

_GENERATION_AND_VERSION = (
    "SELECT value, (SELECT data_version FROM pragma_data_version) FROM meta"
    " WHERE key = 'generation'"
)


class SQLiteDatabase(ThreadSnapshots[SQLiteSnapshot]):
    """An index file: snapshots to read, transactions to write, views kept in step."""

    def __init__(self, path: str | Path, create: bool = True, read_only: bool = False) -> None:
        self.path = Path(path)
        self.location = str(self.path)
        state = connecting.open_file(self.path, create, read_only)
        self.read_only = not state.writable
        self.schema_version = state.version
        self._immutable = state.immutable
        folder = self.path.with_name(self.path.name + "-segments")
        self.files = SegmentFiles(folder, attach=attach_graph)
        self.views = ViewHistory(self.files)
        self.terms = TermCache()
        self.numbered = NumberedTerms()
        self._write_lock = threading.RLock()
        self._local = threading.local()
        self._readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()
        self._writer: sqlite3.Connection | None = None
        self._closed = False

    # -- connections ------------------------------------------------------------------
    def _reader(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            if self._closed:
                raise StoreError(f"{self.path} is closed")
            conn = connecting.connect(self.path, read_only=True, immutable=self._immutable)
            self._local.conn = conn
            with self._readers_lock:
                self._readers.append(conn)
        return conn

    def writer(self) -> sqlite3.Connection:
        if self.read_only:
            raise StorageError(
                f"{self.path} is open for search only (the file or its folder is read-only)",
                "fix the permissions to index or delete",
            )
        if self._writer is None:
            self._writer = connecting.connect(self.path, read_only=False)
        return self._writer

    def close(self) -> None:
        with self._write_lock, self._readers_lock:
            self._closed = True
            for conn in self._readers:
                conn.close()
            self._readers.clear()
            if self._writer is not None:
                self._writer.close()
                self._writer = None

    # -- reading ----------------------------------------------------------------------
    # A read transaction on this thread's connection (`ThreadSnapshots.snapshot`; nested
    # ones share it).
    def _begin(self) -> SQLiteSnapshot:
        conn = self._reader()
        try:
            conn.execute("BEGIN")
            generation, rows = self._version_read(conn)
        except sqlite3.Error as exc:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            raise from_sqlite(exc, str(self.path)) from None
        return SQLiteSnapshot(self.views, self.terms, self.location, conn, generation, rows)

    def _read_failure(self, snap: SQLiteSnapshot, exc: Exception) -> Exception | None:
        if isinstance(exc, SegmentMissing):
            return StoreError(
                f"{self.path}: segment file {exc} was merged away during a long read", "retry"
            )
        return from_sqlite(exc, str(self.path)) if isinstance(exc, sqlite3.Error) else None

    def _end(self, snap: SQLiteSnapshot) -> None:
        with contextlib.suppress(sqlite3.Error):
            snap.conn.execute("COMMIT")

    def _version_read(self, conn: sqlite3.Connection) -> tuple[int, dict[str, SQLiteCollectionRow]]:
        """The generation and collections a read transaction sees. The collections are the
        ones this connection read last while SQLite's data_version (read in the same
        statement, so of the same version) says no connection committed since: any commit,
        this store's or another process's, maintenance's too (which moves `flushed_upto`
        without a new generation), makes it read them again (5-8 us a search otherwise)."""
        value, version = conn.execute(_GENERATION_AND_VERSION).fetchone()
        last = getattr(self._local, "collections", None)
        if last is not None and last[0] is conn and last[1] == version:
            return int(value), last[2]
        rows = read_collections(conn)
        self._local.collections = (conn, version, rows)
        return int(value), rows

    def collections(self) -> dict[str, CollectionInfo]:
        with self.snapshot() as snap:
            return snap.collections()

    # -- writing ----------------------------------------------------------------------
    @property
    def write_lock(self) -> threading.RLock:
        """Held by every write of this process; hold it across a commit and the publish of
        views built outside `write()` (maintenance), so views change in commit order."""
        return self._write_lock

    @contextlib.contextmanager
    def write(self) -> Iterator[SQLiteWrite]:
        with self._write_lock:
            conn = self.writer()
            try:
                conn.execute("BEGIN IMMEDIATE")
                before = int(
                    conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()[0]
                )
            except sqlite3.Error as exc:
                self._rollback(conn)
                raise from_sqlite(exc, str(self.path)) from None
            write = SQLiteWrite(self.views, self.terms, self.numbered, conn, before + 1)
            try:
                yield write
                write.finish()
            except sqlite3.Error as exc:
                self._rollback(conn)
                raise from_sqlite(exc, str(self.path)) from None
            except BaseException:
                self._rollback(conn)
                raise
            try:
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                self._rollback(conn)
                raise from_sqlite(exc, str(self.path)) from None
            self._publish(write)
        self.written(write)

    def written(self, write: SQLiteWrite) -> None:
        """After a write committed and its views are published (the store wakes its
        maintenance here)."""

    @staticmethod
    def _rollback(conn: sqlite3.Connection) -> None:
        """Undo an open transaction; a failure to do so never hides the original error."""
        if conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")

    def _publish(self, write: SQLiteWrite) -> None:
        """After COMMIT: the new vocabulary and views (memory follows the commit)."""
        if write.terms_top is not None:
            self.terms.advance(write.terms_top, write.terms_top + write.inserted_terms)
        self.terms.add(write.new_terms)
        for names, numbers, ids in write.numbered:
            self.numbered.learn(names, numbers, ids)
        for collection_id, changes in write.changes.items():
            base = self.views.current(collection_id)
            if base is not None and base.generation >= write.generation and not changes.layout:
                continue  # another thread already caught up from the database, this write included
            if changes.layout or base is None or base.generation != write.generation - 1:
                self.views.drop(collection_id)  # reload from the database at the next snapshot
                continue
            view = base.evolve(
                write.generation,
                added=[Part(s) for s in changes.added],
                removed=changes.removed,
                late=changes.late,
            )
            self.views.remember(compact_memory(view))
