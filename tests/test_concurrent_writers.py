"""Several processes write one index at once while others read (slow): no lost update, no
deadlock, no error, and readers never miss a document that always exists. On PostgreSQL the
writers are separate processes sharing one database, as app servers on several machines."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from ragloom import Index
from tests.churn import STEADY, read_for, steady_doc

pytestmark = pytest.mark.slow
SECONDS = 30.0
WRITERS = 4


def test_four_writer_processes_lose_nothing(locate) -> None:
    location = str(locate("writers"))
    env = {**os.environ, "RAGLOOM_EMBEDDER": "none"}
    with Index(location, embedder=None) as index:
        index.add([steady_doc(i, 0) for i in range(STEADY)])
        script = [sys.executable, "-m", "tests.churn"]
        started = time.monotonic()
        writers = [
            subprocess.Popen(
                [*script, "adder", location, str(SECONDS), str(seed)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
            )
            for seed in range(1, WRITERS + 1)
        ]
        reader = subprocess.Popen(
            [*script, "reader", location, str(SECONDS), "99"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        mine = read_for(index, SECONDS, 5)
        results = [p.communicate(timeout=300) for p in [*writers, reader]]
        elapsed = time.monotonic() - started
        for process, (_, stderr) in zip([*writers, reader], results):
            assert process.returncode == 0, stderr.decode()[-2000:]
        added = [json.loads(out)["added"] for out, _ in results[:WRITERS]]
        other = json.loads(results[-1][0])
        stored = set(index.chunk_documents().values())
        lost = [
            f"w{seed}-{n}"
            for seed, count in zip(range(1, WRITERS + 1), added)
            for n in range(count)
            if f"w{seed}-{n}" not in stored
        ]
        reads = {k: mine[k] + other[k] for k in mine}
        writes = sum(added)
        print(
            f"concurrent writers: {WRITERS} processes, {writes} writes ({writes / elapsed:.0f}/s),"
            f" reads {reads}"
        )
        assert all(count > 0 for count in added), added
        assert lost == []
        assert len(stored) == STEADY + writes
        assert reads["errors"] == reads["miss"] == reads["mixed"] == reads["partial"] == 0
        assert index.check() == []
