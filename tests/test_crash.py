"""SIGKILL during ingest (slow): at least 20 rounds of killing a writing process at random
moments (batch commits, segment flushes and merges included). Every time the index opens,
`ragloom check` passes, and it equals a clean build of the documents it holds; resuming the
ingest finishes with every document once."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ragloom import Index
from tests.churn import corpus

pytestmark = pytest.mark.slow
ROUNDS = 20
BATCH = 25  # documents per committed batch (tests.churn.corpus)


def _scores(index: Index, query: str) -> dict[str, float]:
    """Every matching chunk's score (fewer than top_k, so ties never cut the list)."""
    hits = index.search(query, top_k=10_000, mode="lexical")
    assert len(hits) < 10_000
    return {h.chunk_id: h.score for h in hits}


def _equal_to_clean_build(path: Path, tmp: Path, documents: dict) -> None:
    with Index(path, embedder=None) as index:
        assert index.check() == []
        held = {d.doc_id for d in index.documents(limit=10_000)}
        assert held <= set(documents)
        clean_path = tmp / f"clean-{len(held)}.db"
        clean_path.unlink(missing_ok=True)
        with Index(clean_path, embedder=None) as clean:
            clean.add([documents[d] for d in sorted(held)])
            for query in ("amber brook", "cinder", "grove heath inlet", "fjord"):
                assert _scores(index, query) == _scores(clean, query)
            assert index.stats()["chunks"] == clean.stats()["chunks"]


def _held_batches(path: Path) -> int:
    """How many leading batches the index holds whole (the ingest commits one per batch)."""
    if not path.exists():
        return 0
    with Index(path, embedder=None) as index:
        return index.stats()["documents"] // BATCH


def _batch_number(line: str) -> int:
    """The batch a `committed doc-B-J` line reports (-1 for any other line)."""
    parts = line.split()
    if len(parts) == 2 and parts[0] == "committed" and parts[1].startswith("doc-"):
        return int(parts[1].split("-")[1])
    return -1


def test_sigkill_during_ingest_loses_nothing_committed(tmp_path: Path) -> None:
    path = tmp_path / "crash.db"
    seed = 11
    documents = {d.id: d for batch in corpus(seed) for d in batch}
    env = {**os.environ, "RAGLOOM_EMBEDDER": "none"}
    rng = random.Random(3)
    kills = 0
    for _ in range(ROUNDS):
        proc = subprocess.Popen(
            [sys.executable, "-m", "tests.churn", "ingest", str(path), str(seed)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            text=True,
        )
        # Cut the run short however fast the machine is: after 1-3 newly committed batches
        # (held ones are skipped quickly), then a random moment inside the next batch, its
        # flush or a merge.
        held = _held_batches(path)
        target = held + rng.randint(1, 3)
        for line in proc.stdout:
            if _batch_number(line) >= target:
                break
        time.sleep(rng.uniform(0.0, 0.015))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == -signal.SIGKILL or proc.returncode == 0, err
        _equal_to_clean_build(path, tmp_path, documents)
    assert kills >= ROUNDS - 2  # (almost) every round really was cut short
    finish = subprocess.run(
        [sys.executable, "-m", "tests.churn", "ingest", str(path), str(seed)],
        capture_output=True,
        env=env,
        timeout=300,
    )
    assert finish.returncode == 0, finish.stderr
    with Index(path, embedder=None) as index:
        ids = [d.doc_id for d in index.documents(limit=10_000)]
        assert sorted(ids) == sorted(documents)  # every document once, no duplicates
    _equal_to_clean_build(path, tmp_path, documents)
