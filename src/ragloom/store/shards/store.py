"""A collection sharded across PostgreSQL servers, behind the same store seam as one server.

Each shard is an ordinary ragloom PostgreSQL store (`PostgresStore`: its own schema, postings,
statistics and HNSW index, its own replicas); this store routes between them. Documents are
placed by a hash of their id (`placement`); a write touching several shards commits with
two-phase commit (`commit`); a search opens one snapshot per shard under the shards' commit
locks, so it sees a multi-shard write whole or not at all, and ranks with the statistics of
the whole set (`snapshot`), so rankings equal one server's.

A shard that cannot be reached is left out of searches, which then say so (degraded, naming
it; `strict` raises `ShardUnavailable`); writes to it fail at once with `ShardUnavailable`,
while writes to the other shards go on.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

import psycopg

from ragloom.errors import InputError, ReadInterrupted, ShardUnavailable, StoreError
from ragloom.store.base import Store, ThreadSnapshots
from ragloom.store.postgres import PostgresStore
from ragloom.store.postgres.errors import from_psycopg
from ragloom.store.records import CollectionInfo, NewDocument
from ragloom.store.shards import commit, fanout
from ragloom.store.shards.fanout import fan_out
from ragloom.store.shards.snapshot import ShardedSnapshot
from ragloom.store.shards.url import ShardSet, parse_shard_set
from ragloom.store.shards.write import ShardedWrite, moving_from

RETRY_AFTER = 1.0  # seconds a shard found down is skipped before it is tried again
BEGIN_ATTEMPTS = 3  # snapshots opened again after resolving orphaned prepared transactions


class ShardedStore(ThreadSnapshots[ShardedSnapshot], Store):
    """A ragloom index spread over the shards of a `postgresql+shards://` URL."""

    def __init__(self, url: str, create: bool = True, read_only: bool = False) -> None:
        self.set: ShardSet = parse_shard_set(url)
        self.location = self.set.shown
        self.read_only = read_only
        self._create = create
        self._shards: list[PostgresStore | None] = [None] * len(self.set.shards)
        self._down: dict[int, tuple[float, str]] = {}  # shard -> (since, why)
        self._open_lock = threading.Lock()
        self._controls: dict[int, psycopg.Connection] = {}
        self._local = threading.local()
        self.schema = ""
        errors = []
        for i in range(len(self.set.shards)):
            try:
                self.shard(i)
            except ShardUnavailable as exc:
                errors.append(exc)
        if len(errors) == len(self.set.shards):
            raise errors[0]
        self.moving_from: int | None = None  # while a shard is being added (`grow`)
        self._read_layout()
        for i in range(len(self.set.shards)):  # writers that died between the two phases
            if self._shards[i] is not None and not read_only:
                with contextlib.suppress(StoreError, psycopg.Error):
                    self.resolve(i)

    def _read_layout(self) -> None:
        """Refuse a URL that lacks shards the set has grown by; note a move in progress."""
        for i, store in enumerate(self._shards):
            if store is None:
                continue
            with store.snapshot() as snap:
                meta = dict(
                    snap.conn.execute(
                        "SELECT key, value FROM meta WHERE key IN ('shards', 'moving_from')"
                    ).fetchall()
                )
            if int(meta.get("shards", 0)) > self.count:
                self.close()
                raise InputError(
                    f"{self.set.label(i)} belongs to a set of {meta['shards']} shards, but the"
                    f" URL names {self.count}",
                    "open the set with the URL naming every shard (ragloom add-shard prints it)",
                )
            moving = moving_from(meta, self.count)
            if moving is not None:
                self.moving_from = moving

    @property
    def count(self) -> int:
        return len(self.set.shards)

    # -- shards -----------------------------------------------------------------------
    def shard(self, i: int) -> PostgresStore:
        """Shard `i`'s store, opened on first use; `ShardUnavailable` when it is down."""
        store = self._shards[i]
        if store is not None:
            return store
        with self._open_lock:
            if self._shards[i] is not None:
                return self._shards[i]  # type: ignore[return-value]
            since, why = self._down.get(i, (0.0, ""))
            if time.monotonic() - since < RETRY_AFTER:
                raise ShardUnavailable(f"{self.set.label(i)} is down ({why})", self.hint)
            try:
                store = PostgresStore(self.set.shards[i], self._create, self.read_only)
            except StoreError as exc:
                self._down[i] = (time.monotonic(), exc.message)
                raise ShardUnavailable(
                    f"{self.set.label(i)} is down ({exc.message})", self.hint
                ) from None
            if self.schema and store.schema != self.schema:
                store.close()
                raise StoreError(f"every shard of {self.location} must use one schema name")
            self.schema = store.schema
            self._down.pop(i, None)
            self._shards[i] = store
            return store

    hint = "the other shards keep working; start the shard's server again, then retry"

    def down(self, i: int, why: str) -> None:
        """Note that shard `i` failed (searches skip it for `RETRY_AFTER` seconds)."""
        self._down[i] = (time.monotonic(), why)

    def control(self, i: int) -> psycopg.Connection:
        """An autocommit connection to shard `i`'s primary for commit locks and COMMIT
        PREPARED (used only while holding the shard's write lock)."""
        conn = self._controls.get(i)
        if conn is None or conn.closed or conn.broken:
            conn = self._controls[i] = self.shard(i).control_connection()
        return conn

    def resolve(self, i: int) -> list[str]:
        """Finish shard `i`'s orphaned prepared transactions (`commit.resolve`)."""
        opened: dict[int, psycopg.Connection] = {}

        def connect(j: int) -> Any:
            def get() -> psycopg.Connection:
                if j not in opened:
                    opened[j] = self.shard(j).control_connection()
                return opened[j]

            return get

        try:
            return commit.resolve(self.schema, {j: connect(j) for j in range(self.count)}, i)
        finally:
            for conn in opened.values():
                with contextlib.suppress(Exception):
                    conn.close()

    # -- reading ----------------------------------------------------------------------
    # One snapshot per reachable shard, taken under the commit locks (a clean cut):
    # `ThreadSnapshots.snapshot`, nested ones sharing it.
    def _read_failure(self, snap: ShardedSnapshot, exc: Exception) -> Exception | None:
        if not isinstance(exc, psycopg.Error):
            return None
        for i, part in snap.parts.items():
            if part.conn.broken or part.conn.closed:
                self.down(i, "its connection broke during a search")
                self.shard(i).discard(part.conn)
        if isinstance(exc, psycopg.OperationalError):
            return ReadInterrupted(f"{self.location}: a shard went away during a search", "retry")
        return from_psycopg(exc, self.location)

    def _end(self, snap: ShardedSnapshot) -> None:
        snap.finish()

    def _begin(self) -> ShardedSnapshot:
        for attempt in range(BEGIN_ATTEMPTS):
            parts, missing, orphans, locks = self._open_parts()
            snap = ShardedSnapshot(self, parts, missing, locks)
            if not orphans or attempt == BEGIN_ATTEMPTS - 1:
                return snap
            snap.finish()  # the locks go before resolving (it takes them exclusively)
            for i in orphans:
                with contextlib.suppress(StoreError, psycopg.Error):
                    self.resolve(i)
        raise AssertionError("unreachable")

    def _open_parts(
        self,
    ) -> tuple[dict[int, Any], dict[int, str], list[int], dict[int, psycopg.Connection]]:
        """Each reachable shard's snapshot, opened in the same round trip as its commit lock
        taken in shared mode. First on every shard at once with try-locks (a search never
        waits for a lock while holding another, so it cannot deadlock with a writer taking
        them in shard order); if some lock is busy (a multi-shard write is committing), all
        are let go and taken again waiting, in shard order. Returns the parts, the missing
        shards, the shards with orphaned prepared transactions and the locks still held
        (released by the snapshot with its first query on each shard: every lock is taken
        before any is released, which is what makes the cut clean)."""
        shards: dict[int, PostgresStore] = {}
        missing: dict[int, str] = {}
        for i in range(self.count):
            try:
                shards[i] = self.shard(i)
            except ShardUnavailable as exc:
                missing[i] = exc.message
        opened = fan_out(lambda i, shard: self._open_part(i, shard, False), shards)
        if not all(taken for _, _, taken, _ in opened.values()):
            for part, conn, taken, _ in opened.values():
                with contextlib.suppress(psycopg.Error):
                    if part is not None:
                        if taken:
                            commit.shared_unlock(conn, self.schema)
                        part.conn.execute("COMMIT")
            opened = {i: self._open_part(i, shard, True) for i, shard in shards.items()}
        parts: dict[int, Any] = {}
        locks: dict[int, psycopg.Connection] = {}
        orphans: list[int] = []
        for i, (part, conn, _, orphaned) in opened.items():
            if part is None:
                missing[i] = conn  # why it is left out
                continue
            parts[i], locks[i] = part, conn
            if orphaned:
                orphans.append(i)
        return parts, missing, orphans, locks

    def _open_part(self, i: int, shard: PostgresStore, wait: bool) -> tuple[Any, Any, bool, bool]:
        """(snapshot, the connection holding the lock, lock taken, orphans seen) on shard i;
        (None, why it is down, True, False) when it cannot be reached."""
        lead = commit.shared_lock_sql(self.schema, wait)
        for attempt in (0, 1):  # a connection found dead is replaced once
            conn = None
            try:
                conn = shard.search_connection()
                part = shard.open_snapshot(conn, lead)
                taken, orphaned = part.led or (None, None)
                return part, conn, bool(taken), bool(orphaned)
            except (psycopg.Error, StoreError) as exc:
                if conn is not None:
                    shard.discard(conn)  # closing it lets go of its lock
                if attempt:
                    why = str(exc).strip().splitlines()[0] if str(exc).strip() else "down"
                    self.down(i, why)
                    return None, f"{self.set.label(i)} is down ({why})", True, False
        raise AssertionError("unreachable")

    def collections(self) -> dict[str, CollectionInfo]:
        with self.snapshot() as snap:
            return snap.collections()

    # -- writing ----------------------------------------------------------------------
    @contextlib.contextmanager
    def write(self) -> Iterator[ShardedWrite]:
        """One atomic write: on one shard an ordinary transaction, on several two-phase."""
        current = getattr(self._local, "snapshot", None)
        if current is not None:  # a write inside a search: let go of its shared locks
            current.release_all()
        write = ShardedWrite(self)
        try:
            yield write
            write.commit()
        except BaseException:
            write.abort()
            raise

    # -- the rest of the seam ---------------------------------------------------------
    def pending(self, collection: CollectionInfo, limit: int) -> list[tuple[int, str | None, str]]:
        return fanout.pending(self, collection, limit)

    def chunk_texts(self, collection: CollectionInfo) -> list[tuple[int, str | None, str]]:
        return fanout.chunk_texts(self, collection)

    def export(self, collection: str, batch: int = 200) -> Iterator[list[NewDocument]]:
        return fanout.export(self, collection, batch)

    def check(self) -> list[str]:
        return fanout.check(self)

    def shard_status(self) -> list[dict[str, Any]]:
        """Each shard: reachable or not, its documents and chunks, its replicas."""
        return fanout.shard_status(self)

    def maintain(self, wait: bool = True, on_step: Any = None) -> int:
        return sum(self.shard(i).maintain(wait, on_step) for i in range(self.count))

    def finish(self, on_step: Any = None) -> int:
        return sum(s.finish(on_step) for s in self._shards if s is not None)

    def close(self) -> None:
        for conn in self._controls.values():
            with contextlib.suppress(Exception):
                conn.close()
        self._controls.clear()
        for store in self._shards:
            if store is not None:
                store.close()


def open_shards(url: str, create: bool = True, read_only: bool = False) -> ShardedStore:
    """`open_store`'s entry point for postgresql+shards:// URLs."""
    return ShardedStore(url, create=create, read_only=read_only)
