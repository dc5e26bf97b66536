"""A remote embedding service that is down, hung or wrong never takes down what does not need
it: opening, serving, lexical search, stats and deletes work; ingest keeps documents (vectors
pending, filled later); hybrid answers lexically and says why; dense raises a typed error."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from ragloom import Document, Index
from ragloom.errors import EmbeddingOffline, EmbedFailed
from tests.embed_server import EmbedServer
from tests.server_launch import ServerProcess, free_port

DOCS = [
    Document("fetch", "safeFetch wraps fetch with retries and a timeout.", title="Networking"),
    Document("cache", "The image cache keeps thumbnails on disk for a week.", title="Caching"),
]


def _spec(port: int, provider: str = "ollama") -> str:
    # cooldown=0: these tests bring the service back at once and expect the next call to
    # reach it (the cooldown after a failure is tested in test_remote.py)
    return f"{provider}:nomic-embed-text@http://127.0.0.1:{port}?cooldown=0"


def test_ingest_while_the_service_is_down_keeps_the_documents(tmp_path: Path) -> None:
    port = free_port()
    with Index(tmp_path / "i.db", embedder=_spec(port)) as index:  # opening calls nothing
        report = index.add(DOCS)
        assert (report.documents, report.chunks, report.pending) == (2, 2, 2)
        assert report.embedding_error and "offline" in report.embedding_error
        assert index.search("safeFetch", mode="lexical")[0].document_id == "fetch"
        hits = index.search("safeFetch")  # hybrid: answers from BM25 and says why
        assert hits[0].document_id == "fetch" and hits.degraded
        assert "offline" in hits.reason and "wait for vectors" in hits.reason
        with pytest.raises(EmbeddingOffline):
            index.search("safeFetch", mode="dense")
        stats = index.stats()
        assert stats["pending"] == 2 and stats["collections"]["default"]["vectors"] == 0
        assert [d.pending for d in index.documents()] == [1, 1]
        assert index.delete("cache") == 1  # deletes need no service either
    with EmbedServer(port=port) as server:  # the service comes back on the same address
        with Index(tmp_path / "i.db", embedder=_spec(port)) as index:
            assert index.fill_pending() == 1
            assert index.stats()["pending"] == 0
            dense = index.search("safeFetch retries", mode="dense")
            assert dense[0].document_id == "fetch" and not dense.degraded
        assert server.requests  # the vectors really came from the service


def test_a_later_successful_index_call_fills_what_was_pending(tmp_path: Path) -> None:
    with EmbedServer() as server:
        spec = _spec(int(server.url.rsplit(":", 1)[1]))
        with Index(tmp_path / "i.db", embedder=spec) as index:
            server.mode = "500"
            first = index.add(DOCS)
            assert first.pending == 2 and "embed_failed" in first.embedding_error
            server.mode = "ok"
            second = index.add([Document("more", "another paragraph about retries")])
            assert second.pending == 0
            assert index.stats()["pending"] == 0  # the earlier two were embedded too


def test_on_embed_error_raise_keeps_nothing(tmp_path: Path) -> None:
    port = free_port()
    with Index(tmp_path / "i.db", embedder=_spec(port)) as index:
        with pytest.raises(EmbeddingOffline):
            index.add(DOCS, on_embed_error="raise")
        assert index.stats()["documents"] == 0


def test_wrong_dimension_answers_are_failures_not_vectors(tmp_path: Path) -> None:
    with EmbedServer() as server:
        spec = _spec(int(server.url.rsplit(":", 1)[1]), "openai")
        with Index(tmp_path / "i.db", embedder=spec) as index:
            index.add(DOCS)  # learns 16 dimensions
            server.mode = "wrong_dim"
            report = index.add([Document("x", "a new note about fetch")])
            assert report.pending == 1 and "embed_failed" in report.embedding_error
            hits = index.search("fetch retries")
            assert hits.degraded and "embed_failed" in hits.reason
            with pytest.raises(EmbedFailed):
                index.search("fetch retries", mode="dense", strict=True)


def test_one_query_embedding_for_several_collections(tmp_path: Path) -> None:
    with EmbedServer() as server:
        spec = _spec(int(server.url.rsplit(":", 1)[1]))
        with Index(tmp_path / "i.db", embedder=spec) as index:
            for name in ("chapters", "characters", "world"):
                index.add(DOCS, collection=name)
            before = len(server.requests)
            index.search_many(
                "fetch retries", [{"collection": n} for n in ("chapters", "characters", "world")]
            )
            assert len(server.requests) - before == 1


def _cli(index: Path, spec: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "RAGLOOM_EMBEDDER": spec}
    return subprocess.run(
        [sys.executable, "-m", "ragloom", "--index", str(index), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


def test_cli_lexical_search_and_stats_never_need_the_service(tmp_path: Path) -> None:
    port = free_port()
    path = tmp_path / "i.db"
    with Index(path, embedder=_spec(port, "openai")) as index:
        index.add(DOCS)
    for args in (["search", "safeFetch", "--mode", "lexical"], ["stats"], ["search", "fetch"]):
        result = _cli(path, _spec(port, "openai"), *args)
        assert result.returncode == 0, result.stderr
    dense = _cli(path, _spec(port, "openai"), "search", "fetch", "--mode", "dense")
    assert dense.returncode == 1 and "cannot reach" in dense.stderr
    assert "Traceback" not in dense.stderr


def test_the_server_starts_serves_and_fills_pending_when_the_service_returns(
    tmp_path: Path,
) -> None:
    port = free_port()
    env = {"RAGLOOM_EMBEDDER": _spec(port), "RAGLOOM_PENDING_RETRY": "0.3"}
    with ServerProcess(tmp_path / "i.db", env=env) as server:
        http = httpx.Client(base_url=server.url, timeout=30)
        assert http.get("/health").status_code == 200
        indexed = http.post(
            "/index", json={"documents": [{"id": d.id, "text": d.text} for d in DOCS]}
        )
        assert indexed.status_code == 200, indexed.text
        assert indexed.json()["pending"] == 2
        lexical = http.post("/query", json={"query": "safeFetch", "mode": "lexical"}).json()
        assert lexical["results"][0]["document_id"] == "fetch"
        hybrid = http.post("/query", json={"query": "safeFetch"}).json()
        assert hybrid["degraded"] is True and hybrid["results"][0]["document_id"] == "fetch"
        assert http.get("/stats").json()["pending"] == 2
        assert [d["pending"] for d in http.get("/documents").json()["documents"]] == [1, 1]
        dense = http.post("/query", json={"query": "safeFetch", "mode": "dense"})
        assert dense.status_code == 503 and "offline" in dense.text
        with EmbedServer(port=port):
            deadline = time.monotonic() + 20
            while http.get("/stats").json()["pending"] and time.monotonic() < deadline:
                time.sleep(0.2)
            assert http.get("/stats").json()["pending"] == 0
            dense = http.post("/query", json={"query": "safeFetch retries", "mode": "dense"})
            assert dense.status_code == 200 and dense.json()["results"]
