"""The five uses of docs/architecture.md through the HTTP sidecar (real server subprocess,
real HTTP)."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import httpx
import pytest

from tests.server_launch import ServerProcess

from .embed_server import EmbedServer
from .scenario_data import (
    CODING_DOCS,
    DOCS_POSTS,
    NOVEL_CHAPTERS,
    NOVEL_CHARACTERS,
    NOVEL_WORLD,
    STUDY_COMMENTARY,
    STUDY_OPTIONS,
    expected_study_boost,
    write_lore,
)


def as_json(docs) -> list[dict]:
    return [
        {k: v for k, v in dataclasses.asdict(d).items() if v is not None and k != "collection"}
        for d in docs
    ]


@pytest.fixture(scope="module")
def lore(tmp_path_factory) -> Path:
    return write_lore(tmp_path_factory.mktemp("lore"))


@pytest.fixture(scope="module")
def http(tmp_path_factory, lore: Path):
    env = {**os.environ, "RAGLOOM_EMBEDDER": "local"}
    path = tmp_path_factory.mktemp("srv") / "index.db"
    with (
        ServerProcess(path, roots=[lore], env=env) as server,
        httpx.Client(base_url=server.url, timeout=60) as client,
    ):
        yield client


def post(client: httpx.Client, url: str, body: dict, status: int = 200) -> dict:
    response = client.post(url, json=body)
    assert response.status_code == status, response.text
    return response.json()


def test_story_bible(http: httpx.Client, lore: Path):
    report = post(http, "/index", {"path": str(lore), "collection": "bible"})
    assert report["ok"] and report["files"] == 3
    again = post(http, "/index", {"path": str(lore), "collection": "bible"})
    assert again["unchanged"] and again["documents_unchanged"] == report["documents"]
    assert again["chunks"] == report["chunks"] and again["chunks_written"] == 0
    answer = post(http, "/query", {"query": "What does Kaelen Voss carry?", "collection": "bible"})
    assert len(answer["results"]) == 3  # the default top_k
    assert answer["results"][0]["document_id"] == "characters.md"
    assert "Kaelen Voss" in answer["context"].split("\n---\n")[0]


def test_docs_chat(http: httpx.Client):
    post(
        http,
        "/index",
        {
            "documents": as_json(DOCS_POSTS),
            "collection": "blog",
            "chunking": {"max_chars": 600, "overlap": 100, "min_chars": 20},
            "title_weight": 2,
        },
    )
    ident = post(
        http,
        "/query",
        {"query": "safeFetch", "collection": "blog", "fusion": "rrf", "rrf_k": 60, "explain": True},
    )
    top = ident["results"][0]
    assert top["document_id"] == "safe-fetch-helper" and top["match"] in ("lexical", "both")
    assert top["chunk_id"].startswith("safe-fetch-helper-")
    assert top["explain"]["legs"]["lexical"]["rank"] == 1
    assert ident["mode"] == "hybrid" and ident["degraded"] is False
    para = post(
        http, "/query", {"query": "how do I keep my sourdough starter alive", "collection": "blog"}
    )
    assert para["results"][0]["document_id"] == "sourdough-notes"


def test_coding_knowledge_base(http: httpx.Client):
    post(http, "/index", {"documents": as_json(CODING_DOCS), "collection": "kb"})
    answer = post(
        http,
        "/query",
        {
            "query": "persist models in SwiftData",
            "collection": "kb",
            "top_k": 5,
            "fusion": "weighted",
            "weights": {"dense": 0.55, "lexical": 0.30, "metadata": 0.15},
            "prefer": [{"chunk_type": "api_doc"}],
            "tokens": True,
            "filters": {
                "domain": "apple",
                "min_os": {"$version_lte": "18.0"},
                "tags": {"$overlap": ["SwiftData"]},
                "$not": {"deprecated": True},
            },
        },
    )
    hits = answer["results"]
    assert hits and hits[0]["document_id"] == "swiftdata-modelcontainer"
    assert all("SwiftData" in h["metadata"]["tags"] and h["tokens"] > 0 for h in hits)


def test_novel_memory(http: httpx.Client):
    characters = ["Mira", "Oren", "Ilse", "the Warden"]
    post(
        http,
        "/index",
        {
            "documents": as_json(NOVEL_CHAPTERS),
            "collection": "chapters",
            "chunking": {"max_chars": 1000, "overlap": 200, "min_chars": 20},
            "enrich": {"novel": {"characters": characters}},
        },
    )
    post(http, "/index", {"documents": as_json(NOVEL_CHARACTERS), "collection": "characters"})
    post(http, "/index", {"documents": as_json(NOVEL_WORLD), "collection": "world"})
    answer = post(
        http,
        "/query",
        {
            "query": "What does Mira know about the Warden and the drowned bell?",
            "budget": 900,
            "collections": [
                {
                    "collection": "chapters",
                    "top_k": 5,
                    "label": "Previous Scene",
                    "filters": {"$not": {"chapter": 3}, "importance": {"$gte": 6}},
                },
                {"collection": "characters", "top_k": 3, "label": "Character Info"},
                {"collection": "world", "top_k": 3, "label": "WORLD"},
            ],
        },
    )
    groups = {g["label"]: g for g in answer["groups"]}
    assert len(groups["Previous Scene"]["results"]) <= 5
    assert len(groups["Character Info"]["results"]) <= 3 and len(groups["WORLD"]["results"]) <= 3
    assert all(
        h["metadata"]["chapter"] != 3 and h["metadata"]["importance"] >= 6
        for h in groups["Previous Scene"]["results"]
    )
    assert "[Previous Scene]" in answer["context"] and "[WORLD]" in answer["context"]
    assert answer["context_tokens"] <= 900
    assert [p["number"] for p in answer["passages"]] == list(range(1, len(answer["passages"]) + 1))


@pytest.mark.parametrize(
    "controls",
    [
        {"filters": {"a": {"$regex": "x"}}},
        {"filters": "chapter = 9"},
        {"boosts": [{"when": {"a": 1}, "factor": -2}]},
        {"boosts": [{"factor": 2}]},
        {"diversity": {"max_per": {"scholar_id": 0}}},
        {"diversity": {"mmr": {"lambda": 3}}},
        {"weights": {"sparse": 1}},
        {"mode": "fuzzy"},
        {"budget": 0},
        {"collections": [{"top_k": 2}]},
        {"collections": []},
        {"top_k": -1},
    ],
)
def test_malformed_controls_are_400(http: httpx.Client, controls: dict):
    answer = post(http, "/query", {"query": "bell", "collection": "world", **controls}, 400)
    assert answer["ok"] is False and answer["code"] in ("bad_request", "bad_input")
    assert isinstance(answer["error"], str) and answer["error"]


def test_study_app_through_the_server(tmp_path: Path):
    with EmbedServer() as service:
        # cooldown=0: each failure below is a fresh call, not the remembered one
        spec = f"openai:remote-embed@{service.url}?cooldown=0&retry_delay=0.05"
        env = {**os.environ, "RAGLOOM_EMBEDDER": spec}
        with (
            ServerProcess(tmp_path / "study.db", env=env) as server,
            httpx.Client(base_url=server.url, timeout=60) as http,
        ):
            post(http, "/index", {"documents": as_json(STUDY_COMMENTARY)})
            body = {"query": "election mercy hardening", **STUDY_OPTIONS, "explain": True}
            hits = post(http, "/query", body)["results"]
            assert 0 < len(hits) <= 10
            scholars = [h["metadata"]["scholar_id"] for h in hits]
            assert max(scholars.count(s) for s in scholars) <= 2
            for hit in hits:
                factor = expected_study_boost(hit["metadata"])
                assert hit["score"] == pytest.approx(hit["fused_score"] * factor)
            service.mode = "500"  # new query texts: a repeated one is answered from the cache
            failed = post(http, "/query", {**body, "query": "grace and works", "strict": True}, 502)
            assert failed["code"] == "embed_failed"
            service.stop()
            offline = post(http, "/query", {**body, "query": "faith alone", "strict": True}, 503)
            assert offline["code"] == "offline"
            degraded = post(http, "/query", {**body, "query": "faith alone"})
            assert degraded["degraded"] is True and degraded["reason"].startswith("offline")


def test_client_passes_controls(http: httpx.Client):
    from ragloom import Client

    with Client(str(http.base_url)) as client:
        hits = client.search(
            "bell",
            collection="world",
            filters={"$not": {"document_id": "x"}},
            explain=True,
            diversity={"max_per": {"title": 1}},
            mode="lexical",
        )
        assert hits and hits[0].explain["legs"]["lexical"]["rank"] == 1
        packed = client.context("bell", collection="world", budget=200)
        assert packed.startswith("Answer using only the numbered passages")


def test_dense_request_on_a_lexical_collection_is_409(tmp_path: Path):
    env = {**os.environ, "RAGLOOM_EMBEDDER": "none"}
    with (
        ServerProcess(tmp_path / "lex.db", env=env) as server,
        httpx.Client(base_url=server.url, timeout=60) as client,
    ):
        post(client, "/index", {"documents": [{"id": "a", "text": "a lantern"}]})
        for body in ({"mode": "dense"}, {"diversity": {"mmr": {"lambda": 0.5}}}):
            answer = post(client, "/query", {"query": "lantern", **body}, 409)
            assert answer["code"] == "needs_vectors"
        dense = post(client, "/query", {"query": "lantern", "mode": "dense"}, 409)
        assert '"mode": "lexical"' in dense["hint"]  # the request's words, not a CLI flag
