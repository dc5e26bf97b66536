"""Adding a shard to a set online (`ragloom add-shard`): the documents whose home becomes the
new shard move there in small atomic writes while searches and writes go on.

1. One write across every shard creates the collections on the new shard and records the
   set's size (`meta` key `shards`) and the move (`moving_from`: the old size) everywhere.
   From then on, a writer that places a document on its new home also removes any copy on
   its old home in the same atomic write, and processes opening the old, shorter URL are
   refused.
2. For each old shard and collection, the documents that jump hashing sends to the new shard
   move in batches: each batch is one two-phase write holding both shards' write locks that
   reads the documents inside the transaction (so a concurrent replacement is never undone),
   inserts them on the new shard and deletes them from the old. A search sees each batch
   before or after, never half: nothing missing, nothing twice.
3. A last write across every shard clears `moving_from`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from ragloom.store.postgres.export import export_rows
from ragloom.store.records import CollectionInfo
from ragloom.store.shards.placement import shard_of
from ragloom.store.shards.store import ShardedStore
from ragloom.store.shards.url import parse_shard_set, shard_set_url
from ragloom.store.shards.write import ShardedWrite

MOVE_BATCH = 200


@dataclass
class GrowReport:
    url: str  # the grown set's URL (without passwords)
    moved: dict[str, int] = field(default_factory=dict)  # documents moved, by collection


def grown_url(set_url: str, shard_url: str) -> str:
    """The URL of the set with `shard_url` (a `postgresql://` URL) added at the end."""
    return shard_set_url([*parse_shard_set(set_url).shards, shard_url])


def set_meta(write: ShardedWrite, values: dict[str, int | None]) -> None:
    """Record (or with None, remove) `meta` keys on every shard, in one write."""
    for i in write.every():
        conn = write.part(i).conn
        for key, value in values.items():
            conn.execute("DELETE FROM meta WHERE key = %s", (key,))
            if value is not None:
                conn.execute("INSERT INTO meta (key, value) VALUES (%s, %s)", (key, value))


def add_shard(
    set_url: str,
    shard_url: str,
    batch: int = MOVE_BATCH,
    on_batch: Callable[[str, int], None] | None = None,
) -> GrowReport:
    """Grow the set at `set_url` by the shard at `shard_url`, moving its documents online."""
    url = grown_url(set_url, shard_url)
    store = ShardedStore(url, create=True)
    try:
        new = store.count - 1
        names = store.collections()
        with store.write() as write:  # step 1
            for i in write.every():  # in shard order, as every writer opens them: the new
                write.part(i)  # shard first would wait for a writer that waits for it
            for info in names.values():
                write.local(new, info)
            set_meta(write, {"shards": store.count, "moving_from": new})
        store.moving_from = new
        report = GrowReport(store.location, {name: 0 for name in names})
        for i in range(new):  # step 2
            for name, info in sorted(names.items()):
                for ids in _leaving(store, i, name, store.count, batch):
                    moved = _move(store, i, new, info, ids)
                    report.moved[name] += moved
                    if on_batch:
                        on_batch(name, moved)
        with store.write() as write:  # step 3
            set_meta(write, {"moving_from": None})
        store.moving_from = None
        return report
    finally:
        store.close()


def _leaving(store: ShardedStore, i: int, name: str, count: int, batch: int) -> Iterator[list[str]]:
    """Batches of the ids on shard `i` whose home in a set of `count` is another shard."""
    shard = store.shard(i)
    with shard.snapshot() as snap:
        if name not in snap.rows:
            return
        ids = [
            d
            for (d,) in snap.conn.execute(
                "SELECT doc_id FROM documents WHERE collection_id = %s ORDER BY id",
                (snap.rows[name].id,),
            )
            if shard_of(d, count) != i
        ]
    for start in range(0, len(ids), batch):
        yield ids[start : start + batch]


def _move(store: ShardedStore, old: int, new: int, info: CollectionInfo, ids: list[str]) -> int:
    """One atomic move of the documents of `ids` still on shard `old` to shard `new`."""
    moved = 0
    with store.write() as write:
        for i in sorted((old, new)):  # both write locks, in shard order
            write.part(i)
        source = write.local(old, info)
        target = write.local(new, info)
        for documents in export_rows(write.part(old).conn, source.id, len(ids), ids):
            if not documents:
                continue
            write.part(new).write.put(target, documents)
            for doc in documents:
                write.part(old).write.delete(source, doc.document.id)
            moved += len(documents)
    return moved
