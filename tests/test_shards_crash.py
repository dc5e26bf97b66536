"""A shard's server killed (kill -9) and restarted again and again while a writer adds
batches of documents spread over every shard and 8 threads search (slow): no search fails,
every answer is whole or marked degraded naming the shard, no hit is wrong, and every batch is
stored whole or not at all (two-phase commit; orphaned prepared transactions finished)."""

from __future__ import annotations

import os
import re
import threading
import time

import pytest

from ragloom import Document, Index
from ragloom.errors import ShardUnavailable, StoreError
from ragloom.store.shards.placement import shard_of

from .shard_set import start_shards

pytestmark = pytest.mark.slow
ROUNDS = int(os.environ.get("RAGLOOM_SHARD_KILLS", "4"))
BATCH = 12


def test_kill_9_of_a_shard_under_writes_and_searches(tmp_path) -> None:
    servers = start_shards(3)
    try:
        url = servers.url()
        base = [Document(f"base{i}", f"anchor quay number{i}") for i in range(60)]
        live = {d.id for d in base if shard_of(d.id, 3) != 1}
        with Index(url, embedder=None) as index:
            index.add(base)
        stop = threading.Event()
        failures: list[str] = []
        counts = {"whole": 0, "degraded": 0, "batches": 0, "refused": 0}

        def search() -> None:
            with Index(url, embedder=None) as reader:
                while not stop.is_set():
                    try:
                        hits = reader.search("anchor quay", top_k=100, mode="lexical")
                    except Exception as exc:  # counted: the target is zero
                        failures.append(repr(exc))
                        continue
                    got = {h.document_id for h in hits}
                    if not hits.degraded:
                        counts["whole"] += 1
                        if got != {d.id for d in base}:
                            failures.append(f"whole answer with {len(got)} hits")
                    else:
                        counts["degraded"] += 1
                        if "shard 1" not in (hits.reason or "") or got != live:
                            failures.append(f"degraded answer {hits.reason!r}, {len(got)} hits")

        def write() -> None:
            n = 0
            with Index(url, embedder=None) as writer:
                while not stop.is_set():
                    docs = [Document(f"b{n}-{j}", f"batch{n} tide") for j in range(BATCH)]
                    try:
                        writer.add(docs)
                        counts["batches"] += 1
                    except (ShardUnavailable, StoreError):
                        counts["refused"] += 1
                        time.sleep(0.05)
                    n += 1

        threads = [threading.Thread(target=search) for _ in range(8)]
        threads.append(threading.Thread(target=write))
        for thread in threads:
            thread.start()
        victim = servers.clusters[1].primary
        for _ in range(ROUNDS):
            time.sleep(1.5)
            victim.kill()
            time.sleep(1.0)
            victim.start()
        time.sleep(2.0)
        stop.set()
        for thread in threads:
            thread.join()
        print(f"{ROUNDS} kills: {counts}, {len(failures)} failures")
        assert failures == []
        assert counts["whole"] > 50 and counts["degraded"] > 0 and counts["batches"] > 5
        with Index(url, embedder=None) as index:
            assert not index.search("anchor", top_k=5).degraded
            stored: dict[int, int] = {}
            for doc in index.documents(limit=100_000):
                found = re.match(r"b(\d+)-", doc.doc_id)
                if found:
                    stored[int(found.group(1))] = stored.get(int(found.group(1)), 0) + 1
            assert all(c == BATCH for c in stored.values()), {
                b: c for b, c in stored.items() if c != BATCH
            }
            assert len(stored) >= counts["batches"]
            assert index.check() == []
            store = index.store
            for i in range(3):
                with store.shard(i).snapshot() as snap:
                    assert not snap.conn.execute(
                        "SELECT gid FROM pg_prepared_xacts WHERE gid LIKE 'ragloom:%'"
                    ).fetchall()
    finally:
        servers.stop()
