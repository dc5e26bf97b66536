"""A hung or dead embedding service degrades a hybrid query within 2 s by default (a chat
widget's user waits about that long), while indexing keeps its own longer timeout. The
service is a real HTTP stand-in speaking the OpenAI embeddings protocol over loopback."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

import ragloom
from ragloom import Document
from ragloom.remote import Timeouts
from tests.embed_server import EmbedServer
from tests.server_launch import ServerProcess

LIMIT = 2.0  # seconds a user waits for an answer
DOCS = [
    Document("key", "Mira forged the silver key in the north tower.", title="Key"),
    Document("bell", "The drowned bell rings only for the dead.", title="Bell"),
]


def _built(path: Path, url: str) -> None:
    """An index whose collection embeds with the service at `url` (vectors stored)."""
    with ragloom.Index(path, embedder=f"openai:stand-in@{url}/v1") as index:
        report = index.add(DOCS)
        assert report.pending == 0 and not report.embedding_error


def _timed_search(path: Path, query: str = "silver key") -> tuple[float, ragloom.SearchResult]:
    with ragloom.Index(path) as index:  # a fresh process's first query: nothing cached
        started = time.monotonic()
        hits = index.search(query)
        return time.monotonic() - started, hits


@pytest.mark.parametrize("mode", ["hang", "slow"])
def test_a_hung_or_slow_service_degrades_the_first_hybrid_query_within_2_s(
    tmp_path: Path, mode: str
) -> None:
    with EmbedServer() as server:
        _built(tmp_path / "i.db", server.url)
        server.mode = mode  # hang: never answers; slow: answers after 2 s
        took, hits = _timed_search(tmp_path / "i.db")
    assert hits.degraded and "did not answer" in (hits.reason or ""), hits.reason
    assert hits[0].document_id == "key"  # the lexical leg answers
    assert took < LIMIT, f"{took:.2f} s"


def test_a_dead_service_degrades_the_first_hybrid_query_within_2_s(tmp_path: Path) -> None:
    with EmbedServer() as server:
        _built(tmp_path / "i.db", server.url)
    took, hits = _timed_search(tmp_path / "i.db")  # the port is closed now
    assert hits.degraded and "cannot reach" in (hits.reason or ""), hits.reason
    assert hits[0].document_id == "key" and took < LIMIT, f"{took:.2f} s"


def test_indexing_keeps_its_longer_timeout(tmp_path: Path) -> None:
    with EmbedServer() as server:
        server.mode = "slow"  # each answer takes 2 s: over the query budget, under read
        started = time.monotonic()
        _built(tmp_path / "i.db", server.url)  # asserts the vectors were stored
        assert time.monotonic() - started > LIMIT


def test_the_query_budget_is_an_option_of_the_spec(tmp_path: Path) -> None:
    default = Timeouts()
    assert default.query_budget is None  # LLM and rerank calls keep their own rules
    chosen = Timeouts().with_options({"query_budget": "0.4"})
    assert chosen.query_budget == 0.4
    with pytest.raises(ragloom.InputError):
        Timeouts(query_budget=0)
    with EmbedServer() as server:
        _built(tmp_path / "i.db", server.url)
        server.mode = "hang"
        spec = f"openai:stand-in@{server.url}/v1?query_budget=0.4"
        with ragloom.Index(tmp_path / "i.db", embedder=spec) as index:
            started = time.monotonic()
            hits = index.search("silver key")
            assert hits.degraded and time.monotonic() - started < 1.0


def test_over_http_a_hung_service_answers_the_query_within_2_s(tmp_path: Path) -> None:
    with EmbedServer() as server:
        _built(tmp_path / "i.db", server.url)
        env = {"RAGLOOM_EMBEDDER": f"openai:stand-in@{server.url}/v1"}
        with ServerProcess(tmp_path / "i.db", env=env) as serve:
            server.mode = "hang"
            with httpx.Client(base_url=serve.url, timeout=30) as http:
                started = time.monotonic()
                answer = http.post("/query", json={"query": "silver key"})
                took = time.monotonic() - started
    assert answer.status_code == 200 and answer.json()["degraded"] is True, answer.text
    assert took < LIMIT, f"{took:.2f} s"
