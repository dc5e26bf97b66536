"""The commit locks a shard set's snapshot holds after opening (`ShardedStore._open_parts`),
let go as early and as cheaply as possible.

A search takes every shard's commit lock in shared mode, with its snapshot, before it lets go
of any (that is what makes the cut clean). Each lock then goes with the first query the
search sends to its shard, pipelined with it (no round trip of its own), or with the COMMIT
that ends the snapshot; reads that may take long, and writes from inside a read, let go of
all of them first (`release_all`).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import psycopg

from ragloom.store.shards import commit
from ragloom.store.shards.fanout import fan_out

T = TypeVar("T")


def _usable(conn: psycopg.Connection) -> bool:
    return not conn.closed and not conn.broken


class HeldLocks:
    """Shard -> the connection still holding its commit lock, for one snapshot's parts."""

    def __init__(self, schema: str, parts: dict[int, Any], locks: dict[int, Any]) -> None:
        self.parts = parts  # shard -> PostgresSnapshot
        self._unlock = commit.shared_unlock_sql(schema)
        self._locks = dict(locks)
        self._gates = {i: threading.Lock() for i in parts}

    def on(self, i: int, work: Callable[[], T]) -> T:
        """`work()` on shard i; the first on each shard also lets go of the shard's commit
        lock, pipelined with `work`'s queries."""
        gate = self._gates[i]
        if i not in self._locks and not gate.locked():
            return work()
        with gate:  # others wait while the shard's connection is in pipeline mode
            conn = self._locks.pop(i, None)
            if conn is None:
                return work()
            if conn is not self.parts[i].conn:  # the snapshot moved to the primary
                conn.execute(self._unlock)
                return work()
            with conn.pipeline():
                conn.execute(self._unlock)
                return work()

    def each(self, work: Callable[[int, Any], T], items: dict[int, Any]) -> dict[int, T]:
        """`work(shard, item)` on every shard in parallel (`fan_out`), through `on`."""
        return fan_out(lambda i, item: self.on(i, lambda: work(i, item)), items)

    def release_all(self) -> None:
        """Let go of every lock still held (before a longer read or a write)."""
        for i in list(self._locks):
            self.on(i, lambda: None)

    def finish(self) -> None:
        """End every shard's transaction, letting go of a lock still held in the same round
        trip (a broken connection has let go of both). One shard after another: a COMMIT
        is quicker than handing it to another thread (measured on this 2-core machine)."""
        for i, part in self.parts.items():
            conn = self._locks.pop(i, None)
            with contextlib.suppress(psycopg.Error):
                if conn is not None and conn is not part.conn and _usable(conn):
                    conn.execute(self._unlock)
                if _usable(part.conn):
                    both = conn is part.conn
                    part.conn.execute(f"{self._unlock}; COMMIT" if both else "COMMIT")
