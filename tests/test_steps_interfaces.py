"""The service steps behave the same through the CLI, the HTTP sidecar and the Client."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import ragloom
from ragloom import Client
from ragloom.errors import InputError, LLMFailed
from tests.llm_server import LLMServer
from tests.server_launch import ServerProcess

DOCS = [
    {
        "id": "key",
        "text": "Mira forged the silver key in the north tower.",
        "metadata": {"book": 1},
    },
    {
        "id": "gate",
        "text": "The silver key opens the gate of the drowned city.",
        "metadata": {"book": 2},
    },
    {"id": "city", "text": "Oskar once lived in the drowned city.", "metadata": {"book": 2}},
]


@pytest.fixture(scope="module")
def llm_server():
    with LLMServer() as s:
        yield s


@pytest.fixture(scope="module")
def sidecar(llm_server, tmp_path_factory):
    index = tmp_path_factory.mktemp("steps") / "index.db"
    env = {
        "RAGLOOM_EMBEDDER": "none",
        "RAGLOOM_LLM": f"openai:tiny@{llm_server.url}?timeout=2&retry_delay=0.05&cooldown=0",
        "RAGLOOM_RERANKER": f"tei:bge@{llm_server.url}?timeout=2&retry_delay=0.05&cooldown=0",
    }
    with ServerProcess(index, env=env) as srv, Client(srv.url, timeout=30) as client:
        client.add(DOCS)
        yield client


def test_query_fields_run_the_steps(sidecar, llm_server):
    llm_server.replies = ['{"queries": ["drowned city"]}']
    hits = sidecar.search(
        "Oskar", top_k=3, expand="llm", rerank=True, rerank_depth=10, explain=True, tokens=True
    )
    assert hits.variants == ["Oskar", "drowned city"]
    assert hits.steps["rerank"]["model"] == "tei:bge" and not hits.degraded
    assert hits[0].rerank_score is not None and hits[0].explain["rerank"]["rank_before"] >= 1
    assert hits.total_tokens == sum(h.tokens for h in hits) > 0


def test_query_hops_and_strict_failures(sidecar, llm_server):
    llm_server.replies = [json.dumps({"sufficient": False, "follow_up_query": "drowned city"})]
    llm_server.replies.append(json.dumps({"sufficient": True}))
    hits = sidecar.search("who forged the key", top_k=1, hops=3)
    assert [t["query"] for t in hits.trace] == ["who forged the key", "drowned city"]
    assert hits.steps["hops"]["stopped"] == "sufficient" and [h.hop for h in hits] == [1, 2]
    llm_server.mode = "500"
    try:
        degraded = sidecar.search("Oskar", expand="llm")
        assert degraded.degraded and "llm_failed" in degraded.reason
        with pytest.raises(LLMFailed) as failed:
            sidecar.search("Oskar", expand="llm", strict=True)
        assert failed.value.status == 502 and failed.value.code == "llm_failed"
    finally:
        llm_server.mode = "ok"


def test_query_step_fields_are_validated(sidecar):
    for bad in ({"hops": 9}, {"expand": "magic"}, {"rerank_depth": 0}, {"max_variants": 1}):
        with pytest.raises(InputError):
            sidecar.search("Oskar", **bad)


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ragloom", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "RAGLOOM_EMBEDDER": "none", **env},
        timeout=120,
    )


def test_cli_flags(tmp_path, llm_server):
    db = tmp_path / "cli.db"
    with ragloom.Index(db, embedder=None) as idx:
        idx.add([ragloom.Document(d["id"], d["text"], metadata=d["metadata"]) for d in DOCS])
    llm = f"openai:tiny@{llm_server.url}"
    llm_server.replies = ['{"queries": ["drowned city"]}']
    done = _cli(
        "--index", str(db), "--llm", llm, "search", "Oskar", "--expand", "llm",
        "--rerank", f"rerank:bge@{llm_server.url}", "--tokens", "--json", env={},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["expansion"]["variants"] == ["Oskar", "drowned city"]
    assert answer["rerank"]["model"] == "rerank:bge" and answer["total_tokens"] > 0
    assert answer["results"][0]["rerank_score"] is not None
    llm_server.replies = [json.dumps({"sufficient": False, "follow_up_query": "drowned city"})]
    shown = _cli(
        "--index", str(db), "search", "silver key", "--hops", "2", "-k", "1", "--explain",
        env={"RAGLOOM_LLM": llm},
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    assert "hop 2: 'drowned city'" in shown.stderr and "found in hop 2" in shown.stdout
    refused = _cli("--index", str(db), "search", "x", "--hops", "2", env={"RAGLOOM_LLM": ""})
    assert refused.returncode == 1 and "needs an LLM" in refused.stderr
    bad = _cli("--index", str(db), "--llm", "gpt:x", "search", "x", env={})
    assert bad.returncode == 1 and "unknown service spec" in bad.stderr
    llm_server.replies = [json.dumps({"sufficient": True})]
    after = _cli(  # --llm may follow the command, as --store may
        "--index", str(db), "search", "silver key", "--hops", "2", "--llm", llm,
        env={"RAGLOOM_LLM": ""},
    )  # fmt: skip
    assert after.returncode == 0, after.stderr
    assert "multi-hop stopped: sufficient" in after.stderr
