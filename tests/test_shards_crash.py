"""A shard's server killed (kill -9) and restarted again and again while a writer adds
batches of documents spread over every shard and 8 threads search (slow): no search fails,
every answer is whole or marked degraded naming the shard, no hit is wrong, and every batch is
stored whole or not at all (two-phase commit; orphaned prepared transactions finished).

Kills alternate between a moment the clock picks (often during a bulk add) and the two points
between the phases of a batch's commit (`tests.shard_set.inject_faults`): right after shard 1
PREPAREs,
and right after shard 0's COMMIT PREPARED. Each of those leaves shard 1 with a prepared
transaction of a decided write, which must be committed (`commit.resolve`) once it is back."""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from collections import Counter

import pytest

from ragloom import Document, Index
from ragloom.errors import ShardUnavailable, StoreError
from ragloom.store.shards import commit
from ragloom.store.shards.placement import shard_of

from .shard_set import inject_faults, start_shards

pytestmark = pytest.mark.slow
ROUNDS = int(os.environ.get("RAGLOOM_SHARD_KILLS", "10"))
SEARCHERS = 8
BATCH = 12
KILLS = [None, ("prepared", 1), ("committed", 0)]  # round n kills at KILLS[n % 3]
FINISHED = re.compile(r"orphaned prepared transaction finished: (commit|rollback) (\S+)")


def batch_ids(n: int) -> list[str]:
    return [f"b{n}-{j}" for j in range(BATCH)]


def test_kill_9_of_a_shard_under_writes_and_searches(tmp_path, caplog, monkeypatch) -> None:
    caplog.set_level(logging.WARNING, "ragloom.store")
    servers = start_shards(3)
    try:
        url = servers.url()
        victim = servers.clusters[1].primary
        base = [Document(f"base{i}", f"anchor quay number{i}") for i in range(60)]
        live = {d.id for d in base if shard_of(d.id, 3) != 1}
        with Index(url, embedder=None) as index:
            index.add(base)
        stop = threading.Event()
        failures: list[str] = []
        counts: Counter[str] = Counter()
        tally = threading.Lock()
        written: dict[str, set[int]] = {"ok": set(), "refused": set()}
        armed: list[tuple[str, int] | None] = [None]
        fired = threading.Event()
        current, adding, mid_add = [-1], [False], [0]  # mid_add: clock kills during an add
        fault_batches: dict[str, int] = {}  # gid -> batch, of the kills between the phases

        def fault(step: str, shard: int, gid: str) -> None:  # in the writer's thread
            if armed[0] == (step, shard):
                armed[0] = None
                victim.kill()
                fault_batches[gid] = current[0]
                fired.set()

        for name, patched in inject_faults(fault).items():
            monkeypatch.setattr(commit, name, patched)

        def check_batches(hits, degraded: bool) -> None:
            """Each batch in a answer: all of it (or, degraded, all of it off shard 1)."""
            found = Counter(int(h.document_id[1:].split("-")[0]) for h in hits)
            for n, got in found.items():
                want = sum(shard_of(d, 3) != 1 for d in batch_ids(n)) if degraded else BATCH
                if got != want:
                    failures.append(f"batch {n}: {got} of {want} documents in an answer")

        def search() -> None:
            with Index(url, embedder=None) as reader:
                turn = 0
                while not stop.is_set():
                    turn += 1
                    query = "tide" if turn % 3 == 0 else "anchor quay"
                    try:
                        hits = reader.search(query, top_k=10_000, mode="lexical")
                    except Exception as exc:  # counted: the target is zero
                        failures.append(repr(exc))
                        continue
                    with tally:
                        counts["degraded" if hits.degraded else "whole"] += 1
                    if hits.degraded and "shard 1" not in (hits.reason or ""):
                        failures.append(f"degraded answer {hits.reason!r}")
                    if query == "tide":
                        with tally:
                            counts["batch checks"] += 1
                        check_batches(hits, hits.degraded)
                        continue
                    got = {h.document_id for h in hits}
                    if got != (live if hits.degraded else {d.id for d in base}):
                        failures.append(f"degraded={hits.degraded} answer with {len(got)} hits")

        def write() -> None:
            n = 0
            with Index(url, embedder=None) as writer:
                while not stop.is_set():
                    current[0], adding[0] = n, True
                    try:
                        writer.add([Document(d, f"batch{n} tide") for d in batch_ids(n)])
                        written["ok"].add(n)
                    except (ShardUnavailable, StoreError):
                        written["refused"].add(n)
                        adding[0] = False
                        time.sleep(0.05)
                    adding[0] = False
                    n += 1

        threads = [threading.Thread(target=search) for _ in range(SEARCHERS)]
        threads.append(threading.Thread(target=write))
        for thread in threads:
            thread.start()
        try:
            for n in range(ROUNDS):
                time.sleep(1.5)
                if KILLS[n % len(KILLS)] is None:
                    mid_add[0] += adding[0]
                    victim.kill()
                else:
                    fired.clear()
                    armed[0] = KILLS[n % len(KILLS)]
                    assert fired.wait(120), "no batch reached the fault point"
                time.sleep(1.0)
                victim.start()
            time.sleep(2.0)
        finally:  # the threads end however the rounds end
            stop.set()
            for thread in threads:
                thread.join()
        with Index(url, embedder=None) as index:  # opening finishes what searches did not
            assert not index.search("anchor", top_k=5).degraded
            stored = Counter(
                int(found.group(1))
                for doc in index.documents(limit=100_000)
                if (found := re.match(r"b(\d+)-", doc.doc_id))
            )
            check = index.check()
            store = index.store
            left = []
            for i in range(3):
                with store.shard(i).snapshot() as snap:
                    left += snap.conn.execute(
                        "SELECT gid FROM pg_prepared_xacts WHERE gid LIKE 'ragloom:%'"
                    ).fetchall()
        resolved = [m.groups() for r in caplog.records if (m := FINISHED.search(r.getMessage()))]
        print(
            f"{ROUNDS} kills ({ROUNDS - len(fault_batches)} by the clock, {mid_add[0]} of them"
            f" during a bulk add,"
            f" {len(fault_batches)} between the phases): searches {dict(counts)},"
            f" batches stored {len(written['ok'])}, refused {len(written['refused'])},"
            f" orphaned prepared transactions finished: {Counter(v for v, _ in resolved)},"
            f" {len(failures)} failures"
        )
        assert failures == []
        assert counts["whole"] > 50 and counts["degraded"] > 0 and counts["batch checks"] > 10
        assert len(written["ok"]) > 5
        assert all(c == BATCH for c in stored.values()), {
            b: c for b, c in stored.items() if c != BATCH
        }
        assert written["ok"] <= set(stored)
        assert check == [] and left == []
        # every kill between the phases left a decided write half committed: finished (committed)
        assert len(fault_batches) == sum(KILLS[n % len(KILLS)] is not None for n in range(ROUNDS))
        committed = {gid for verb, gid in resolved if verb == "commit"}
        assert set(fault_batches) <= committed, set(fault_batches) - committed
        assert all(stored[n] == BATCH for n in fault_batches.values())
    finally:
        servers.stop()
