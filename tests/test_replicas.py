"""Searches on PostgreSQL read replicas, writes on the primary, never a stale read for the
writer: one multi-host URL, a real primary and two standbys that apply WAL 300 ms late."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import threading
import time
import uuid

import pytest

from ragloom import Document, Index
from ragloom.errors import StoreError
from ragloom.local_postgres import remove, scratch_folder

from .replication import (
    APPLY_DELAY_MS,
    start_cluster,
    transactions,
    wait_received,
    wait_replayed,
)

pytestmark = pytest.mark.slow
ROUNDS = int(os.environ.get("RAGLOOM_REPLICA_ROUNDS", "1000"))
LOAD_SECONDS = float(os.environ.get("RAGLOOM_REPLICA_LOAD_SECONDS", "60"))


@pytest.fixture(scope="module")
def cluster():
    folder = scratch_folder()
    started = start_cluster(folder)
    yield started
    started.stop()
    remove(folder)


@pytest.fixture
def url(cluster):
    """The cluster's one URL with a schema of this test's own, holding a few documents."""
    schema = f"r_{uuid.uuid4().hex[:10]}"
    address = cluster.url(schema=schema)
    with Index(address, embedder=None) as index:
        index.add([Document(f"base{i}", f"basalt cliff harbour number{i}") for i in range(20)])
    wait_replayed(cluster)
    return address


def test_searches_go_to_replicas_and_writes_to_the_primary(cluster, url) -> None:
    servers = [cluster.primary, *cluster.standbys]
    before = [transactions(s) for s in servers]
    searches = 300
    with Index(url, embedder=None) as reader:  # has not written: no reason for the primary
        for i in range(searches):
            assert reader.search(f"number{i % 20}", top_k=1)[0].document_id == f"base{i % 20}"
    time.sleep(0.5)
    after = [transactions(s) for s in servers]
    counted = [b - a for a, b in zip(before, after)]
    on_replicas = sum(counted[1:]) / sum(counted)
    print(
        f"transactions per server (primary, replica1, replica2): {counted};"
        f" {on_replicas:.1%} on replicas"
    )
    assert on_replicas >= 0.9


def test_the_writer_never_reads_older_than_its_own_writes(url) -> None:
    stale = 0
    plain, after_write = [], []
    with Index(url, embedder=None) as index, Index(url, embedder=None) as other:
        for i in range(ROUNDS):
            index.add([Document("moving", f"lantern round{i} marker")])
            started = time.perf_counter()
            hits = index.search(f"round{i}", top_k=1)
            after_write.append(time.perf_counter() - started)
            if not hits or f"round{i}" not in hits[0].text:
                stale += 1
            started = time.perf_counter()  # the same search by a process that did not write
            other.search(f"round{i}", top_k=1)
            plain.append(time.perf_counter() - started)
    p50 = sorted(plain)[len(plain) // 2] * 1000
    p50_after = sorted(after_write)[len(after_write) // 2] * 1000
    print(
        f"read-your-writes: {ROUNDS} rounds at {APPLY_DELAY_MS} ms apply delay, {stale} stale;"
        f" search p50 {p50_after:.2f} ms right after the write, {p50:.2f} ms by a non-writer"
    )
    assert stale == 0


def test_a_replica_killed_and_restarted_under_load_fails_no_search(cluster, url) -> None:
    failures: list[str] = []
    done = [0]
    stop = threading.Event()
    with Index(url, embedder=None) as index:

        def load(seed: int) -> None:
            rng = random.Random(seed)
            while not stop.is_set():
                i = rng.randrange(20)
                try:
                    hits = index.search(f"number{i}", top_k=1)
                    if not hits or hits[0].document_id != f"base{i}":
                        failures.append(f"wrong answer for number{i}")
                except Exception as exc:  # counted: the target is zero
                    failures.append(repr(exc))
                done[0] += 1

        threads = [threading.Thread(target=load, args=(s,)) for s in range(8)]
        for thread in threads:
            thread.start()
        victim = cluster.standbys[0]
        deadline = time.monotonic() + LOAD_SECONDS
        cycles = 0
        while time.monotonic() < deadline - 1:
            time.sleep(min(2.0, LOAD_SECONDS / 4))
            victim.kill()
            time.sleep(min(2.0, LOAD_SECONDS / 4))
            victim.start()
            cycles += 1
        time.sleep(max(0.0, deadline - time.monotonic()))
        stop.set()
        for thread in threads:
            thread.join()
    print(
        f"replica killed and restarted {cycles}x under 8 threads for {LOAD_SECONDS:.0f} s:"
        f" {done[0]} searches, {len(failures)} failed"
    )
    assert cycles >= 1 and done[0] > 100
    assert failures == []


def test_replication_lag_in_stats_and_health(url) -> None:
    import httpx

    from tests.server_launch import ServerProcess

    with Index(url, embedder=None) as index:
        servers = index.stats()["replicas"]
    roles = sorted(s["role"] for s in servers)
    assert roles == ["primary", "replica", "replica"]
    assert all("lag_bytes" in s for s in servers if s["role"] == "replica")
    env = {"RAGLOOM_EMBEDDER": "none"}
    with ServerProcess(url, env=env, token="lag-secret") as server:  # /health in full
        headers = {"Authorization": "Bearer lag-secret"}
        health = httpx.get(f"{server.url}/health", headers=headers).json()
    assert [s["role"] for s in health["index"]["replicas"]].count("replica") == 2
    out = subprocess.run(
        [sys.executable, "-m", "ragloom.cli", "stats", "--store", url],
        capture_output=True,
        text=True,
        env={**os.environ, "RAGLOOM_EMBEDDER": "none"},
    )
    assert out.returncode == 0 and "replay lag" in out.stdout, out.stderr


def test_the_primary_down_searches_go_on_and_writes_fail_fast(cluster, url) -> None:
    """Last in this module: it stops and restarts the primary."""
    with Index(url, embedder=None) as index:
        index.add([Document("before", "written before the outage: quartz")])
        wait_received(cluster)  # sent, not yet applied (300 ms delay): searched during it
        cluster.primary.stop("immediate")
        try:
            assert index.search("quartz", top_k=1)[0].document_id == "before"
            started = time.monotonic()
            with pytest.raises(StoreError) as info:
                index.add([Document("during", "written during the outage")])
            failed_after = time.monotonic() - started
            assert info.value.code in ("read_only", "store_unavailable")
            with Index(url, embedder=None) as opened:  # opening needs no primary to search
                assert opened.search("basalt harbour", top_k=1)
            cli = subprocess.run(
                [sys.executable, "-m", "ragloom.cli", "--store", url, "delete", "base1"],
                capture_output=True,
                text=True,
                env={**os.environ, "RAGLOOM_EMBEDDER": "none"},
            )
            assert cli.returncode == 1 and "error:" in cli.stderr
            assert "Traceback" not in cli.stderr
            print(f"primary down: writes fail after {failed_after:.2f} s with {info.value.code}")
            assert failed_after < 2.0
        finally:
            cluster.primary.start()
        index.add([Document("after", "written after the outage: jasper")])  # no restart
        assert index.search("jasper", top_k=1)[0].document_id == "after"
        assert all(h.document_id != "during" for h in index.search("outage", top_k=5))
