"""One write across a shard set: a transaction per shard it touches, opened in shard order.

Each shard's part is an ordinary `PostgresWrite` (same rows, statistics and counters as one
server keeps) under that shard's own write lock, so writes to different shards never wait for
each other. Collections exist on every shard (created together); a document goes to its
placement shard; chunk row ids are translated to and from the set's (`placement`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import psycopg

from ragloom.errors import ShardUnavailable, StoreError
from ragloom.store.base import Write
from ragloom.store.postgres import replicas
from ragloom.store.postgres.errors import from_psycopg
from ragloom.store.postgres.store import PostgresStore
from ragloom.store.postgres.write import PostgresWrite
from ragloom.store.records import (
    ChunkTerms,
    CollectionInfo,
    NewDocument,
    NewDocuments,
    WriteOutcome,
)
from ragloom.store.shards import commit
from ragloom.store.shards.fanout import Shards, fan_out
from ragloom.store.shards.placement import global_row, rows_by_shard, shard_of
from ragloom.store.sql import one

LOCK_TIMEOUT = "30s"  # a writer waiting this long for a shard's write lock gives up
LOCK_SECONDS = 30.0  # the same inside this process
LAYOUT = "SELECT key, value FROM meta WHERE key IN ('shards', 'moving_from')"


def moving_from(layout: dict[str, int], count: int) -> int | None:
    """The set's size before a shard was added, while documents may still sit on their old
    home: during `add-shard`, or for a URL naming a shard the set has not yet grown by."""
    if "moving_from" in layout:
        return int(layout["moving_from"])
    stored = int(layout.get("shards", count))
    return stored if stored < count else None


@dataclass
class Part:
    shard: int
    store: PostgresStore
    conn: psycopg.Connection
    write: PostgresWrite


class ShardedWrite(Write):
    """Operations inside one open write across shards."""

    def __init__(self, store: Shards) -> None:
        self.store = store
        self.parts: dict[int, Part] = {}
        self._held: list[Any] = []  # shard write locks held by this write
        self._infos: dict[tuple[int, str], CollectionInfo] = {}
        # see `moving_from`: as the shards opened say (a new shard says nothing yet)
        self.moving: int | None = store.moving_from

    # -- shards -------------------------------------------------------------------------
    def part(self, i: int) -> Part:
        """Shard `i`'s transaction, begun on first use (its write lock taken)."""
        found = self.parts.get(i)
        if found is not None:
            return found
        shard = self.store.shard(i)  # ShardUnavailable when down
        if not shard._write_lock.acquire(timeout=LOCK_SECONDS):
            raise StoreError(f"{self.store.set.label(i)}: waited too long for its write lock")
        self._held.append(shard._write_lock)
        conn = None
        try:
            conn = shard.writer()
            conn.execute(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
            generation = int(
                one(
                    conn.execute(
                        "UPDATE meta SET value = value + 1 WHERE key = 'generation' RETURNING value"
                    )
                )[0]
            )
            layout: dict[str, Any] = dict(conn.execute(LAYOUT).fetchall())
        except (psycopg.Error, StoreError) as exc:
            if conn is not None:
                shard._rollback(conn)
            raise self._failed(i, exc) from None
        if layout:  # a shard the set is growing by holds no layout yet
            self.moving = self.store.moving_from = moving_from(layout, self.store.count)
        part = self.parts[i] = Part(i, shard, conn, PostgresWrite(shard.indexer, conn, generation))
        return part

    def _failed(self, i: int, exc: BaseException) -> StoreError:
        """The typed error of shard `i` failing: `ShardUnavailable` when it is unreachable."""
        if isinstance(exc, psycopg.Error):
            exc = from_psycopg(exc, self.store.set.label(i))
        if isinstance(exc, ShardUnavailable):
            return exc
        if isinstance(exc, StoreError) and exc.code == "store_unavailable":
            self.store.down(i, exc.message)
            return ShardUnavailable(f"{self.store.set.label(i)}: {exc.message}", self.store.hint)
        return exc if isinstance(exc, StoreError) else StoreError(str(exc))

    def local(self, i: int, collection: CollectionInfo) -> CollectionInfo:
        """The collection as shard `i` numbers it (created there if that shard lacks it)."""
        key = (i, collection.name)
        info = self._infos.get(key)
        if info is None:
            info = self._call(i, lambda w: w.ensure_collection(collection.name, collection.config))
            self._infos[key] = info
        return info

    def _call(self, i: int, work: Any) -> Any:
        part = self.part(i)
        try:
            return work(part.write)
        except psycopg.Error as exc:
            raise self._failed(i, exc) from None

    def every(self) -> range:
        return range(self.store.count)

    # -- collections ------------------------------------------------------------------
    def ensure_collection(self, name: str, config: dict[str, Any]) -> CollectionInfo:
        infos = [self._call(i, lambda w: w.ensure_collection(name, config)) for i in self.every()]
        for i in self.every():  # the set's size, recorded with its first collection
            self.part(i).conn.execute(
                "INSERT INTO meta (key, value) VALUES ('shards', %s) ON CONFLICT (key) DO NOTHING",
                (self.store.count,),
            )
        for i, info in enumerate(infos):
            self._infos[(i, name)] = info
        return infos[0]

    def set_config(self, collection: CollectionInfo, config: dict[str, Any]) -> None:
        for i in self.every():
            info = self.local(i, collection)
            self._call(i, lambda w, info=info: w.set_config(info, config))
            self._infos[(i, collection.name)] = CollectionInfo(info.id, info.name, config)

    def content_hashes(self, collection: CollectionInfo, doc_ids: Sequence[str]) -> dict[str, str]:
        found: dict[str, str] = {}
        for i, ids in sorted(self._group(doc_ids).items()):
            info = self.local(i, collection)
            found.update(self._call(i, lambda w, info=info, ids=ids: w.content_hashes(info, ids)))
        return found

    def _group(self, doc_ids: Sequence[str]) -> dict[int, list[str]]:
        out: dict[int, list[str]] = {}
        for doc_id in doc_ids:
            out.setdefault(shard_of(doc_id, self.store.count), []).append(doc_id)
        return out

    # -- documents --------------------------------------------------------------------
    def put(
        self, collection: CollectionInfo, documents: NewDocuments, terms: ChunkTerms | None = None
    ) -> WriteOutcome:
        outcome = WriteOutcome()
        if not documents:
            return outcome
        chunks = [c for d in documents for c in d.chunks]
        lists = ChunkTerms.for_chunks(terms, chunks).lists() if terms is not None else None
        groups: dict[int, list[int]] = {}
        for n, doc in enumerate(documents):
            groups.setdefault(shard_of(doc.document.id, self.store.count), []).append(n)
        starts = np.concatenate(([0], np.cumsum([len(d.chunks) for d in documents])))
        wanted = set(groups)
        if self.moving:  # old homes too, so that every shard opens in order
            wanted |= {shard_of(d.document.id, self.moving) for d in documents}
        for i in sorted(wanted):  # shard order: no two writers wait for each other in a circle
            self.part(i)
        work: dict[int, tuple[CollectionInfo, list[NewDocument], ChunkTerms | None]] = {}
        for i in sorted(groups):
            part_terms = None
            if lists is not None:
                part_terms = ChunkTerms.from_lists(
                    [lists[j] for n in groups[i] for j in range(starts[n], starts[n + 1])]
                )
            work[i] = (self.local(i, collection), [documents[n] for n in groups[i]], part_terms)

        def put(i: int, item: tuple) -> WriteOutcome:
            done = self._call(i, lambda w: w.put(*item))
            if self.moving:
                ids = [d.document.id for d in item[1]]
                self._remove_elsewhere(i, collection, ids, outcome)
            return done

        # every shard's transaction is open: their inserts run at once (one after another
        # while the set grows, as each also removes copies on other shards)
        done_by = {i: put(i, work[i]) for i in work} if self.moving else fan_out(put, work)
        for i, done in done_by.items():
            outcome.documents += done.documents
            outcome.chunks += done.chunks
            outcome.removed_chunks += done.removed_chunks
            outcome.pending += done.pending
            outcome.rows.extend(global_row(r, i) for r in done.rows)
        return outcome

    def _remove_elsewhere(
        self, home: int, collection: CollectionInfo, doc_ids: list[str], outcome: WriteOutcome
    ) -> None:
        """While the set grows, a document may still sit on its old shard: the write that
        places it on its new home removes that copy in the same atomic write."""
        moving = self.moving
        if not moving:
            return
        for old, ids in self._group_in(doc_ids, moving).items():
            if old == home:
                continue
            info = self.local(old, collection)
            for doc_id in ids:
                removed = self._call(old, lambda w, info=info, d=doc_id: w.delete(info, d))
                outcome.removed_chunks += removed or 0

    @staticmethod
    def _group_in(doc_ids: list[str], shards: int) -> dict[int, list[str]]:
        out: dict[int, list[str]] = {}
        for doc_id in doc_ids:
            out.setdefault(shard_of(doc_id, shards), []).append(doc_id)
        return out

    def delete(self, collection: CollectionInfo, doc_id: str) -> int | None:
        i = shard_of(doc_id, self.store.count)
        if self.moving:  # both homes, in shard order
            for j in sorted({i, shard_of(doc_id, self.moving)}):
                self.part(j)
        info = self.local(i, collection)
        removed = self._call(i, lambda w: w.delete(info, doc_id))
        moving = self.moving
        old = shard_of(doc_id, moving) if moving else i
        if old != i:
            info_old = self.local(old, collection)
            again = self._call(old, lambda w: w.delete(info_old, doc_id))
            if again is not None:
                removed = (removed or 0) + again
        return removed

    # -- vectors ----------------------------------------------------------------------
    def set_vectors(
        self, collection: CollectionInfo, rows: Sequence[int], vectors: np.ndarray
    ) -> int:
        vectors = np.asarray(vectors)
        position = {int(r): n for n, r in enumerate(rows)}
        alive = 0
        for i, local in sorted(rows_by_shard([int(r) for r in rows]).items()):
            picked = vectors[[position[global_row(r, i)] for r in local]]
            info = self.local(i, collection)
            alive += self._call(
                i, lambda w, info=info, r=local, v=picked: w.set_vectors(info, r, v)
            )
        return alive

    def reset_vectors(self, collection: CollectionInfo, config: dict[str, Any]) -> None:
        for i in self.every():
            info = self.local(i, collection)
            self._call(i, lambda w, info=info: w.reset_vectors(info, config))

    # -- commit -----------------------------------------------------------------------
    def commit(self) -> None:
        """Commit every shard's part: one shard directly, several with two-phase commit."""
        try:
            parts = [self.parts[i] for i in sorted(self.parts)]
            if len(parts) == 1:
                part = parts[0]
                try:
                    part.write.finish()
                    part.conn.commit()
                except psycopg.Error as exc:
                    raise self._failed(part.shard, exc) from None
                self._published(part, part.conn)
            elif parts:
                self._commit_many(parts)
        except BaseException:
            self._roll_back()
            raise
        finally:
            self._release()

    def _commit_many(self, parts: list[Part]) -> None:
        members = [
            commit.Participant(p.shard, p.conn, lambda i=p.shard: self.store.control(i))
            for p in parts
        ]
        try:
            unfinished = commit.commit_all(
                self.store.schema, members, lambda m: self.parts[m.shard].write.finish()
            )
        except commit.CommitFailed as exc:
            raise self._failed(exc.shard, exc.cause) from None
        for part in parts:
            if part.shard in unfinished:
                self.store.down(part.shard, "it went away while committing")
                continue
            with contextlib.suppress(psycopg.Error, StoreError):
                self._published(part, self.store.control(part.shard))
        if len(unfinished) == len(parts):
            raise ShardUnavailable(
                f"{self.store.location}: every shard went away while committing; the write "
                "is finished or undone when they are back",
                self.store.hint,
            )

    def _published(self, part: Part, conn: psycopg.Connection) -> None:
        """After commit: read-your-writes marks for replicas, and the HNSW builder's nudge."""
        if part.store.where.hosts > 1:
            part.store.mark.advance(replicas.current_lsn(conn), part.write.generation)
            with contextlib.suppress(psycopg.Error):
                part.conn.rollback()
        if part.write.grown:
            part.store.indexer.nudge(part.write.grown)

    def abort(self) -> None:
        """Roll every open part back (a write that failed before commit)."""
        self._roll_back()
        self._release()

    def _roll_back(self) -> None:
        for part in self.parts.values():
            with contextlib.suppress(Exception):
                part.store._rollback(part.conn)

    def _release(self) -> None:
        while self._held:
            with contextlib.suppress(RuntimeError):
                self._held.pop().release()
        self.parts.clear()
