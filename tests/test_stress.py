"""Replace-while-search under load (slow): writer threads and a writer process replace and
delete documents while reader threads, a reader process and HTTP clients search for documents
that always exist. Every search must find them whole, in one version."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest

from ragloom import Index
from tests.churn import STEADY, read_for, small_segments, steady_doc, write_for
from tests.server_launch import ServerProcess

pytestmark = pytest.mark.slow
SECONDS = 60.0


def _http_reader(url: str, seconds: float, seed: int, counts: dict[str, int]) -> None:
    import random
    import time

    rng = random.Random(seed)
    deadline = time.monotonic() + seconds
    with httpx.Client(base_url=url, timeout=30) as http:
        while time.monotonic() < deadline:
            i = rng.randrange(STEADY)
            response = http.post("/query", json={"query": f"keep{i}", "top_k": 10})
            if response.status_code != 200:
                counts["errors"] += 1
                continue
            counts["searches"] += 1
            mine = [r for r in response.json()["results"] if r["document_id"] == f"steady-{i}"]
            versions = {r["metadata"]["version"] for r in mine}
            if not mine:
                counts["miss"] += 1
            elif len(versions) != 1:
                counts["mixed"] += 1
            elif len(mine) != 3:
                counts["partial"] += 1


def test_no_phantom_misses_and_no_mixed_versions(locate) -> None:
    path = locate("stress")
    env = {**os.environ, "RAGLOOM_EMBEDDER": "none"}
    with Index(path, embedder=None) as index:
        small_segments(index, 60)  # flushes and merges happen during the run
        index.add([steady_doc(i, 0) for i in range(STEADY)])
        script = [sys.executable, "-m", "tests.churn"]
        others = [
            subprocess.Popen(
                [*script, "writer", str(path), str(SECONDS), "7"], stdout=subprocess.PIPE, env=env
            ),
            subprocess.Popen(
                [*script, "reader", str(path), str(SECONDS), "8"], stdout=subprocess.PIPE, env=env
            ),
        ]
        totals: list[dict[str, int]] = []
        http_counts = {"searches": 0, "miss": 0, "mixed": 0, "partial": 0, "errors": 0}
        with ServerProcess(path, env={"RAGLOOM_EMBEDDER": "none"}) as server:
            threads = [
                threading.Thread(target=lambda s=s: totals.append(read_for(index, SECONDS, s)))
                for s in (1, 2)
            ]
            threads += [
                threading.Thread(target=lambda s=s: write_for(index, SECONDS, s)) for s in (3, 4)
            ]
            threads.append(
                threading.Thread(target=_http_reader, args=(server.url, SECONDS, 5, http_counts))
            )
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        outputs = [json.loads(p.communicate(timeout=120)[0]) for p in others]
        assert all(p.returncode == 0 for p in others)
        totals.append(outputs[1])
        totals.append(http_counts)
        summary = {k: sum(t[k] for t in totals) for k in http_counts}
        print("stress:", summary, "process writes:", outputs[0]["writes"])
        # enough load to matter: PostgreSQL pays a round trip per statement on loopback
        assert summary["searches"] >= (20_000 if isinstance(path, Path) else 3_000), summary
        assert summary["miss"] == summary["mixed"] == summary["partial"] == 0, summary
        assert summary["errors"] == 0, summary
        assert index.check() == []
