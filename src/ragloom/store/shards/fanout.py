"""The whole-set operations of a shard set: each asks every shard and puts the answers
together (pending chunks, every chunk's text, export, check, per-shard status); `fan_out`
runs work on every shard at once."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any, Protocol, TypeVar

import psycopg

from ragloom.errors import ShardUnavailable
from ragloom.store.postgres.store import PostgresStore
from ragloom.store.records import CollectionInfo, NewDocument
from ragloom.store.shards.placement import global_row, shard_of
from ragloom.store.shards.url import ShardSet

T = TypeVar("T")
_POOL = ThreadPoolExecutor(max_workers=16, thread_name_prefix="ragloom-shards")


def fan_out(work: Callable[[int, Any], T], items: dict[int, Any]) -> dict[int, T]:
    """`work(shard, item)` for every shard, in parallel when there are several (the first
    on the calling thread: one hand-off fewer). Every call has ended when it returns."""
    if len(items) < 2:
        return {i: work(i, item) for i, item in items.items()}
    first, *rest = items
    futures = {i: _POOL.submit(work, i, items[i]) for i in rest}
    try:
        out = {first: work(first, items[first])}
    finally:
        wait(futures.values())
    out.update((i, f.result()) for i, f in futures.items())
    return out


class Shards(Protocol):
    """What the parts of a shard set read of the store that holds them (`ShardedStore`):
    where it is, its shards (each an ordinary PostgreSQL store, `ShardUnavailable` when
    down), the shard count documents were placed by, and the one a move is leaving."""

    location: str
    schema: str
    hint: str
    set: ShardSet
    moving_from: int | None

    @property
    def count(self) -> int: ...

    def shard(self, i: int) -> PostgresStore: ...

    def down(self, i: int, why: str) -> None: ...

    def control(self, i: int) -> psycopg.Connection: ...


def _local(shard: PostgresStore, collection: CollectionInfo) -> CollectionInfo | None:
    return shard.collections().get(collection.name)


Rows = list[tuple[int, str | None, str]]


def pending(store: Shards, collection: CollectionInfo, limit: int) -> Rows:
    """Up to `limit` chunks waiting for a vector, from the reachable shards in turn."""
    out: list[tuple[int, str | None, str]] = []
    for i in range(store.count):
        if len(out) >= limit:
            break
        try:
            shard = store.shard(i)
        except ShardUnavailable:
            continue
        local = _local(shard, collection)
        if local is not None:
            rows = shard.pending(local, limit - len(out))
            out.extend((global_row(r, i), title, text) for r, title, text in rows)
    return out


def chunk_texts(store: Shards, collection: CollectionInfo) -> list[tuple[int, str | None, str]]:
    """Every chunk of the collection on every shard (all shards must be up)."""
    out: list[tuple[int, str | None, str]] = []
    for i in range(store.count):
        shard = store.shard(i)
        local = _local(shard, collection)
        if local is not None:
            rows = shard.chunk_texts(local)
            out.extend((global_row(r, i), title, text) for r, title, text in rows)
    return out


def export(store: Shards, collection: str, batch: int = 200) -> Iterator[list[NewDocument]]:
    """Every document of the collection, shard after shard (each shard read from one
    snapshot of its own; all shards must be up)."""
    for i in range(store.count):
        shard = store.shard(i)
        if collection in shard.collections():
            yield from shard.export(collection, batch)


def check(store: Shards) -> list[str]:
    """Each shard's own check, and that every document sits on the shard its id places it
    on (a document elsewhere would be found twice or not replaced)."""
    problems: list[str] = []
    for i in range(store.count):
        try:
            shard = store.shard(i)
        except ShardUnavailable as exc:
            problems.append(exc.message)
            continue
        problems.extend(f"{store.set.label(i)}: {p}" for p in shard.check())
        with shard.snapshot() as snap:
            misplaced = [
                (name, doc_id)
                for name, doc_id in snap.conn.execute(
                    "SELECT c.name, d.doc_id FROM documents d"
                    " JOIN collections c ON c.id = d.collection_id"
                )
                if shard_of(doc_id, store.count) != i
            ]
        moving = store.moving_from
        if moving:
            misplaced = [(n, d) for n, d in misplaced if shard_of(d, moving) != i]
        if misplaced:
            name, doc_id = misplaced[0]
            problems.append(
                f"{store.set.label(i)}: {len(misplaced)} documents belong on another shard"
                f" (e.g. {doc_id!r} of {name!r})"
            )
    return problems


def shard_status(store: Shards) -> list[dict[str, Any]]:
    """Each shard: whether it answers, its documents and chunks, its replicas."""
    out: list[dict[str, Any]] = []
    for i in range(store.count):
        entry: dict[str, Any] = {"shard": i, "location": store.set.label(i).split(" (", 1)[1][:-1]}
        try:
            shard = store.shard(i)
            with shard.snapshot() as snap:
                entry["collections"] = snap.document_counts()
            entry["reachable"] = True
            servers = shard.replication()
            if servers is not None:
                entry["replicas"] = servers
        except Exception as exc:  # noqa: BLE001 (a status report lists the failure)
            entry.update(reachable=False, error=getattr(exc, "message", str(exc)))
        out.append(entry)
    return out
