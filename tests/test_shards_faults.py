"""A shard set with one shard's server down (three real servers, one stopped here): searches
answer from the others marked degraded and naming the missing shard, `strict` raises
`ShardUnavailable`, writes that need the dead shard fail at once with it and write nothing,
while writes to the other shards go on; once the server is back, answers are whole again.
A writer process killed between the two phases of a write across shards leaves prepared
transactions behind: the next search finishes them (rolled back when no shard committed,
committed when one did), so the write is seen whole or not at all."""

from __future__ import annotations

import logging
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest

from ragloom import Document, Index
from ragloom.errors import ShardUnavailable
from ragloom.store.shards.placement import shard_of

from .embed_server import EmbedServer
from .shard_set import start_shards


@pytest.fixture(scope="module")
def servers():
    started = start_shards(3)
    yield started
    started.stop()


def on_shard(home: int, n: int, prefix: str) -> list[str]:
    found, i = [], 0
    while len(found) < n:
        if shard_of(f"{prefix}{i}", 3) == home:
            found.append(f"{prefix}{i}")
        i += 1
    return found


def test_a_shard_down_degrades_searches_and_fails_only_its_writes(servers) -> None:
    from ragloom.embedding.http import OllamaEmbedder

    url = servers.url()
    docs = [Document(f"d{i}", f"harbour lantern number{i}") for i in range(60)]
    held = {i: {d.id for d in docs if shard_of(d.id, 3) == i} for i in range(3)}
    dead = servers.clusters[1].primary
    with EmbedServer() as embeddings:
        embedder = OllamaEmbedder(embeddings.url, "hashed-words", retry_delay=0.01)
        with Index(url, embedder=embedder) as index:
            index.add(docs)
            whole = index.search("harbour lantern", top_k=100, mode="hybrid")
            assert {h.document_id for h in whole} == {d.id for d in docs} and not whole.degraded
            dead.stop("immediate")
            try:
                for mode in ("lexical", "hybrid", "dense"):
                    hits = index.search("harbour lantern", top_k=100, mode=mode)
                    assert hits.degraded and "shard 1" in hits.reason, (mode, hits.reason)
                    assert {h.document_id for h in hits} == held[0] | held[2]
                    with pytest.raises(ShardUnavailable, match="shard 1"):
                        index.search("harbour lantern", top_k=5, mode=mode, strict=True)
                started = time.monotonic()
                with pytest.raises(ShardUnavailable, match="shard 1"):
                    index.add([Document(on_shard(1, 1, "new")[0], "harbour new")])
                with pytest.raises(ShardUnavailable):  # a batch touching it: nothing written
                    index.add(
                        [Document(d, "harbour batch") for d in on_shard(0, 2, "b")]
                        + [Document(on_shard(1, 1, "b")[0], "harbour batch")]
                    )
                assert time.monotonic() - started < 3.0
                assert not [h for h in index.search("batch", top_k=10, mode="lexical")]
                ok = on_shard(2, 3, "live")
                index.add([Document(d, "harbour alive") for d in ok])
                got = index.search("alive", top_k=10, mode="lexical")
                assert {h.document_id for h in got} == set(ok) and got.degraded
                status = {s["shard"]: s for s in index.stats()["shards"]}
                assert not status[1]["reachable"] and status[0]["reachable"]
            finally:
                dead.start()
            time.sleep(1.1)  # a shard found down is tried again after a second
            back = index.search("harbour lantern", top_k=200, mode="hybrid")
            assert not back.degraded
            assert {d.id for d in docs} <= {h.document_id for h in back}
            index.add([Document(on_shard(1, 1, "new")[0], "harbour new")])
            assert index.check() == []


WRITER = """
import os, signal, sys
from ragloom import Document, Index
from ragloom.store.shards import commit
from tests.shard_set import inject_faults
url, step, shard, ids = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4].split(",")
def die(at, i, gid):
    if (at, i) == (step, shard):
        print(gid, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
for name, patched in inject_faults(die).items():
    setattr(commit, name, patched)
with Index(url, embedder=None) as index:
    index.add([Document(d, "ferry words") for d in ids])
"""


def prepared(servers, gid: str) -> list[int]:
    """The shards holding the prepared transaction `gid`."""
    found = []
    for i, cluster in enumerate(servers.clusters):
        with psycopg.connect(cluster.primary.url()) as conn:
            if conn.execute("SELECT 1 FROM pg_prepared_xacts WHERE gid = %s", (gid,)).fetchone():
                found.append(i)
    return found


@pytest.mark.parametrize(
    "step, verb, orphans",
    [("prepared", "rollback", [0]), ("committed", "commit", [1, 2])],
    ids=["after-first-prepare", "after-first-commit"],
)
def test_a_writer_killed_between_the_phases_is_finished_by_the_next_search(
    servers, caplog, step, verb, orphans
) -> None:
    url = servers.url()
    ids = on_shard(0, 2, "f") + on_shard(1, 2, "f") + on_shard(2, 2, "f")
    with Index(url, embedder=None) as reader:
        # the collection exists first, so the writer's one write across shards is its batch
        reader.add([Document(f"seed-{step}", "seed words")])
        assert not reader.search("ferry", top_k=10, mode="lexical")
        killed = subprocess.run(
            [sys.executable, "-c", WRITER, url, step, "0", ",".join(ids)],
            cwd=Path(__file__).resolve().parents[1],  # (the writer imports tests.shard_set)
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert killed.returncode == -9, killed.stderr
        gid = killed.stdout.strip()
        assert prepared(servers, gid) == orphans  # left behind by the dead writer
        caplog.set_level(logging.WARNING, "ragloom.store")
        hits = reader.search("ferry", top_k=10, mode="lexical")
        assert not hits.degraded
        want = set(ids) if verb == "commit" else set()
        assert {h.document_id for h in hits} == want
        finished = [r.getMessage() for r in caplog.records if gid in r.getMessage()]
        assert len(finished) == 1 and f"{verb} {gid}" in finished[0]  # one call finishes all
        assert prepared(servers, gid) == []
        reader.add([Document(d, "ferry again") for d in ids])  # no lock left behind
        assert {h.text for h in reader.search("ferry", top_k=10, mode="lexical")} == {"ferry again"}
        assert reader.check() == []
