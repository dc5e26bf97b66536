"""The embedded store: one SQLite file (WAL) plus segment files beside it.

Consistency rules, in one place:
- A search reads inside a read transaction and uses the views of exactly that transaction's
  generation (`view_at`), so ranking and chunk text come from one committed version.
- A write runs in one `BEGIN IMMEDIATE` transaction; the views it changes are published only
  after COMMIT succeeded (`_publish`): a failed write leaves file and memory as they were.
- Readers never take the write lock, at open included; a read-only file opens for search.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from ragloom.dense.graph import attach_graph
from ragloom.errors import StorageError, StoreError
from ragloom.segments.merge_memory import compact_memory
from ragloom.segments.persist import SegmentFiles, SegmentMissing
from ragloom.segments.view import CollectionView, Part
from ragloom.store.base import Store
from ragloom.store.lease import file_lease
from ragloom.store.records import CollectionInfo
from ragloom.store.sqlite import connect as connecting
from ragloom.store.sqlite.errors import from_sqlite
from ragloom.store.sqlite.slices import rows_in
from ragloom.store.sqlite.snapshot import SQLiteSnapshot
from ragloom.store.sqlite.views import CollectionRow, catch_up, load_view, read_collections
from ragloom.store.sqlite.vocabulary import NumberedTerms, TermCache
from ragloom.store.sqlite.write import SQLiteWrite

HISTORY = 8  # recent views kept per collection, for snapshots a little behind the newest
_GENERATION_AND_VERSION = (
    "SELECT value, (SELECT data_version FROM pragma_data_version) FROM meta"
    " WHERE key = 'generation'"
)


class SQLiteStore(Store):
    """An index file: snapshots to read, transactions to write, views kept in step."""

    def __init__(self, path: str | Path, create: bool = True, read_only: bool = False) -> None:
        self.path = Path(path)
        self.location = str(self.path)
        state = connecting.open_file(self.path, create, read_only)
        self.read_only = not state.writable
        self._immutable = state.immutable
        folder = self.path.with_name(self.path.name + "-segments")
        self.files = SegmentFiles(folder, on_load=attach_graph)
        self.terms = TermCache()
        self.numbered = NumberedTerms()
        self._write_lock = threading.RLock()
        self._views_lock = threading.Lock()
        self._views: dict[int, deque[CollectionView]] = {}
        self._local = threading.local()
        self._readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()
        self._writer: sqlite3.Connection | None = None
        self._closed = False
        if state.version < connecting.SCHEMA_VERSION:
            from ragloom.store.sqlite.migrate import migrate

            if self.read_only:
                raise StoreError(
                    f"{self.path} uses an older index format (schema {state.version})",
                    "open it once where it can be written to upgrade it",
                )
            migrate(self)
        self.maintenance: Any = None
        if not self.read_only:
            from ragloom.store.sqlite.maintenance import Maintenance

            self.maintenance = Maintenance(self)
            self.maintenance.resume()  # work an earlier process left pending

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
        if self.maintenance is not None:
            self.maintenance.stop()
        with self._write_lock, self._readers_lock:
            self._closed = True
            for conn in self._readers:
                conn.close()
            self._readers.clear()
            if self._writer is not None:
                self._writer.close()
                self._writer = None

    # -- reading ----------------------------------------------------------------------
    @contextlib.contextmanager
    def snapshot(self) -> Iterator[SQLiteSnapshot]:
        """A read transaction on this thread's connection; a snapshot opened inside another
        one on the same thread is that same snapshot (nested reads see the same version)."""
        current = getattr(self._local, "snapshot", None)
        if current is not None:
            yield current
            return
        conn = self._reader()
        try:
            conn.execute("BEGIN")
            generation, rows = self._version_read(conn)
        except sqlite3.Error as exc:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            raise from_sqlite(exc, str(self.path)) from None
        snap = SQLiteSnapshot(self, conn, generation, rows)
        self._local.snapshot = snap
        try:
            yield snap
        except SegmentMissing as exc:
            raise StoreError(
                f"{self.path}: segment file {exc} was merged away during a long read", "retry"
            ) from None
        except sqlite3.Error as exc:
            raise from_sqlite(exc, str(self.path)) from None
        finally:
            self._local.snapshot = None
            with contextlib.suppress(sqlite3.Error):
                conn.execute("COMMIT")

    def _version_read(self, conn: sqlite3.Connection) -> tuple[int, dict[str, CollectionRow]]:
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

    def current_view(self, collection_id: int) -> CollectionView | None:
        history = self._views.get(collection_id)
        return history[-1] if history else None

    def view_at(
        self, conn: sqlite3.Connection, row: CollectionRow, generation: int
    ) -> CollectionView:
        """The collection's view at exactly `generation` (the snapshot `conn` is in)."""
        base = None
        with self._views_lock:  # a copy: another thread may publish a view meanwhile
            history = tuple(self._views.get(row.id, ()))
        for view in reversed(history):
            if view.generation <= generation:
                base = view
                break
        if base is not None and base.generation == generation:
            return base
        if base is None:
            view = load_view(conn, row, generation, self.files)
        else:
            view = catch_up(conn, base, row, generation, self.files)
        self._remember(view)
        return view

    def _remember(self, view: CollectionView) -> None:
        with self._views_lock:
            history = self._views.setdefault(view.collection_id, deque(maxlen=HISTORY))
            if not history or history[-1].generation < view.generation:
                history.append(view)

    def prepare_view(self, conn: sqlite3.Connection, collection_id: int) -> None:
        """Inside a write, before its changes: bring the collection's view to the database's
        committed state, so this write's changes apply on top of it."""
        generation = int(
            conn.execute("SELECT value FROM meta WHERE key='generation'").fetchone()[0]
        )
        current = self.current_view(collection_id)
        if current is not None and current.generation == generation:
            return
        rows = {r.id: r for r in read_collections(conn).values()}
        row = rows.get(collection_id)
        if row is None:
            return
        self.view_at(conn, row, generation)

    def vocabulary_size(self, view: CollectionView) -> int:
        """Distinct terms in the collection's segments (deleted chunks' terms until merged)."""
        key = ("vocabulary", view.generation)
        cached = view.parts[0].cache.get(key) if view.parts else 0
        if cached is None:
            arrays = [p.segment.terms for p in view.parts]
            cached = int(len(np.unique(np.concatenate(arrays)))) if arrays else 0
            view.parts[0].cache[key] = cached
        return int(cached or 0)

    # -- writing ----------------------------------------------------------------------
    def writer_lease(self, what: str, wait: float = 0.0) -> contextlib.AbstractContextManager:
        if self.read_only:  # writes are refused anyway
            return contextlib.nullcontext()
        lock = self.path.with_name(self.path.name + "-writer.lock")
        return file_lease(str(lock), self.path.name, what, wait)

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
            write = SQLiteWrite(self, conn, before + 1)
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
        if write.changes and self.maintenance is not None:
            self.maintenance.nudge()

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
            base = self.current_view(collection_id)
            if base is not None and base.generation >= write.generation and not changes.layout:
                continue  # another thread already caught up from the database, this write included
            if changes.layout or base is None or base.generation != write.generation - 1:
                with self._views_lock:  # reload from the database at the next snapshot
                    self._views.pop(collection_id, None)
                continue
            view = base.evolve(
                write.generation,
                added=[Part(s) for s in changes.added],
                removed=changes.removed,
                late=changes.late,
            )
            self._remember(compact_memory(view))

    def replace_view(self, old: CollectionView, new: CollectionView) -> bool:
        """Put `new` (the same version as `old`, laid out differently) in its place, if `old`
        is still the newest view of its collection."""
        with self._views_lock:
            history = self._views.get(old.collection_id)
            if not history or history[-1] is not old:
                return False
            history[-1] = new
            return True

    def publish_view(self, view: CollectionView) -> None:
        """Install a view built by maintenance (a flush or merge just committed)."""
        self._remember(view)

    def drop_views(self, collection_id: int) -> None:
        with self._views_lock:
            self._views.pop(collection_id, None)

    # -- helpers the engine uses ------------------------------------------------------
    def pending(self, collection: CollectionInfo, limit: int) -> list[tuple[int, str | None, str]]:
        with self.snapshot() as snap:
            view = snap.collection(collection.name).view
            rows: list[int] = []
            for part in view.parts:
                missing = ~part.has_vector(view.epoch)
                if part.dead is not None:
                    missing &= ~part.dead
                rows.extend(part.segment.rows[missing][: limit - len(rows)].tolist())
                if len(rows) >= limit:
                    break
            if not rows:
                return []
            records = rows_in(
                snap.conn,
                "SELECT c.id, d.title, c.text FROM chunks c"
                " JOIN documents d ON d.id = c.document_id WHERE c.id IN ({marks}) ORDER BY c.id",
                [],
                rows,
            )
            return [(int(r), t, x) for r, t, x in records]

    def chunk_texts(self, collection: CollectionInfo) -> list[tuple[int, str | None, str]]:
        with self.snapshot() as snap:
            return snap.conn.execute(
                "SELECT c.id, d.title, c.text FROM chunks c"
                " JOIN documents d ON d.id = c.document_id WHERE c.collection_id = ? ORDER BY c.id",
                (collection.id,),
            ).fetchall()

    def export(self, collection: str, batch: int = 200):
        from ragloom.store.sqlite.export import export_collection

        return export_collection(self, collection, batch)

    def check(self) -> list[str]:
        from ragloom.store.sqlite.check import check_store

        return check_store(self)

    def repair(self) -> list[str]:
        from ragloom.store.sqlite.repair import repair_store

        return repair_store(self)

    def busy(self) -> contextlib.AbstractContextManager:
        if self.maintenance is None:
            return contextlib.nullcontext()
        return self.maintenance.writing()

    def maintain(self, wait: bool = True, on_step: Any = None) -> int:
        if self.maintenance is None:
            return 0
        return self.maintenance.run_now(on_step)

    def config_json(self, collection_id: int) -> dict[str, Any]:
        with self.snapshot() as snap:
            for row in snap.rows.values():
                if row.id == collection_id:
                    return json.loads(row.config_json)
        raise StoreError(f"no collection {collection_id}")
