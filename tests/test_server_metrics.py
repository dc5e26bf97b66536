"""`GET /metrics` over real HTTP: request counts and latency per endpoint, search stages,
index sizes, pending vectors and embedding-service failures, in Prometheus' text format."""

from __future__ import annotations

import os
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.server_launch import ServerProcess

from .embed_server import EmbedServer

TOKEN = "metrics-secret"


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a scrape, keyed by (name, sorted labels)."""
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def value(scrape: dict, name: str, **labels: str) -> float:
    return scrape.get((name, tuple(sorted(labels.items()))), 0.0)


@pytest.fixture(scope="module")
def service():
    with EmbedServer() as server:
        yield server


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory, service: EmbedServer):
    env = {**os.environ, "RAGLOOM_EMBEDDER": f"openai:remote@{service.url}"}
    path = tmp_path_factory.mktemp("metrics") / "index.db"
    with (
        ServerProcess(path, token=TOKEN, env=env) as server,
        httpx.Client(
            base_url=server.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60
        ) as http,
    ):
        docs = [
            {"id": f"n{i}", "text": f"note {i} about the silver key and door {i}"}
            for i in range(12)
        ]
        assert http.post("/index", json={"documents": docs, "collection": "notes"}).is_success
        yield http


def test_metrics_need_the_token(live: httpx.Client) -> None:
    anonymous = httpx.get(f"{live.base_url}/metrics")
    assert anonymous.status_code == 401
    answer = live.get("/metrics")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/plain")


def test_requests_latency_and_stages_are_counted(live: httpx.Client) -> None:
    before = samples(live.get("/metrics").text)
    for n in range(3):
        body = {"query": f"silver key {n}", "collection": "notes", "mode": "hybrid"}
        assert live.post("/query", json=body).is_success
    assert live.get("/documents/n1", params={"collection": "notes"}).is_success
    assert live.get("/documents/nope", params={"collection": "notes"}).status_code == 404
    after = samples(live.get("/metrics").text)

    def delta(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    ok = {"endpoint": "/query", "method": "POST", "status": "200"}
    assert delta("ragloom_requests_total", **ok) == 3
    assert delta("ragloom_request_seconds_count", endpoint="/query", method="POST") == 3
    assert delta("ragloom_request_seconds_sum", endpoint="/query", method="POST") > 0
    # one series per route template, not per document id
    doc = {"endpoint": "/documents/{doc_id:path}", "method": "GET"}
    assert delta("ragloom_requests_total", **doc, status="200") == 1
    assert delta("ragloom_requests_total", **doc, status="404") == 1
    for stage in ("embed", "lexical", "dense", "fusion", "hydrate"):
        assert delta("ragloom_search_stage_seconds_count", stage=stage) == 3, stage
    assert delta("ragloom_search_stage_seconds_bucket", stage="lexical", le="+Inf") == 3


def test_index_sizes_are_read_at_scrape_time(live: httpx.Client) -> None:
    scrape = samples(live.get("/metrics").text)
    assert value(scrape, "ragloom_index_up") == 1
    assert value(scrape, "ragloom_index_documents", collection="notes") == 12
    assert value(scrape, "ragloom_index_chunks", collection="notes") == 12
    assert value(scrape, "ragloom_index_vectors", collection="notes") == 12
    assert ("ragloom_index_pending_vectors", (("collection", "notes"),)) in scrape
    more = [{"id": "extra", "text": "one more note on the silver key"}]
    assert live.post("/index", json={"documents": more, "collection": "notes"}).is_success
    scrape = samples(live.get("/metrics").text)
    assert value(scrape, "ragloom_index_documents", collection="notes") == 13


def test_embedding_failures_and_degraded_searches(live: httpx.Client, service: EmbedServer) -> None:
    before = samples(live.get("/metrics").text)
    service.mode = "500"
    try:
        body = {"query": "door that fails to embed", "collection": "notes", "mode": "hybrid"}
        answer = live.post("/query", json=body).json()
        assert answer["degraded"] is True
        strict = live.post("/query", json={**body, "query": "another door", "strict": True})
        assert strict.status_code == 502
    finally:
        service.mode = "ok"
    after = samples(live.get("/metrics").text)
    failed = value(after, "ragloom_embedding_failures_total", code="embed_failed")
    assert failed - value(before, "ragloom_embedding_failures_total", code="embed_failed") == 2
    degraded = value(after, "ragloom_degraded_searches_total")
    assert degraded - value(before, "ragloom_degraded_searches_total") == 1
    status = {"endpoint": "/query", "method": "POST", "status": "502"}
    assert value(after, "ragloom_requests_total", **status) >= 1


def test_unusable_index_reports_down(tmp_path: Path) -> None:
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"this is not a sqlite file at all" * 100)
    with ServerProcess(bad, env={"RAGLOOM_EMBEDDER": "none"}) as server:
        scrape = samples(httpx.get(f"{server.url}/metrics").text)
        assert value(scrape, "ragloom_index_up") == 0
