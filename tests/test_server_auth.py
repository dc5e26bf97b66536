"""A token-protected server configured from the environment, with path indexing off."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from tests.server_launch import ServerProcess, free_port

TOKEN = "s3cret-token"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    base = tmp_path_factory.mktemp("auth")
    env = {"RAGLOOM_TOKEN": TOKEN, "RAGLOOM_PORT": str(free_port())}
    with ServerProcess(base / "index.db", env=env) as srv:
        yield srv


@pytest.fixture(scope="module")
def http(server: ServerProcess):
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=server.url, headers=headers, timeout=30) as client:
        yield client


@pytest.fixture(scope="module")
def anon(server: ServerProcess):
    with httpx.Client(base_url=server.url, timeout=30) as client:
        yield client


def test_port_comes_from_environment(server: ServerProcess, anon: httpx.Client) -> None:
    assert anon.get("/health").status_code == 200  # the port we put in RAGLOOM_PORT


def test_empty_index_queries_answer_nothing(http: httpx.Client) -> None:
    """Before anything is indexed, reads are ok and empty, whatever the collection."""
    for body in ({"query": "anything"}, {"query": "anything", "collection": "later"}):
        answer = http.post("/query", json=body).json()
        assert (answer["ok"], answer["results"], answer["context"]) == (True, [], "")
    page = http.get("/documents", params={"collection": "later"}).json()
    assert page["documents"] == [] and page["total"] == 0


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer wrong"},
        {"Authorization": f"Basic {TOKEN}"},
        {"Authorization": TOKEN},
        {"Authorization": f"Bearer {TOKEN}x"},
        {"Authorization": "Bearer"},
    ],
)
@pytest.mark.parametrize(
    "method, path, body",
    [
        ("POST", "/query", {"query": "x"}),
        ("POST", "/index", {"documents": [{"id": "a", "text": "b"}]}),
        ("GET", "/documents", None),
        ("DELETE", "/documents/a", None),
        ("GET", "/stats", None),
        ("GET", "/openapi.json", None),
        ("GET", "/no-such-route", None),
    ],
)
def test_missing_or_wrong_token_is_401(
    anon: httpx.Client, headers: dict, method: str, path: str, body: dict | None
) -> None:
    response = anon.request(method, path, json=body, headers=headers)
    assert response.status_code == 401, response.text
    assert response.headers["www-authenticate"] == "Bearer"
    assert response.json()["ok"] is False
    assert response.json()["code"] == "unauthorized" and response.json()["error"]


def test_health_needs_no_token_and_tells_only_the_token_holder(
    anon: httpx.Client, http: httpx.Client, server: ServerProcess
) -> None:
    assert anon.get("/health").json() == {"ok": True}
    wrong = anon.get("/health", headers={"Authorization": "Bearer nope"})
    assert wrong.json() == {"ok": True}
    full = http.get("/health").json()
    assert full["index"]["open"] is True and full["index"]["path"] == server.index_path.name
    assert str(server.index_path.parent) not in json.dumps(full)


def test_token_grants_access_and_schema_declares_it(http: httpx.Client) -> None:
    assert http.get("/stats").status_code == 200
    schema = http.get("/openapi.json").json()
    assert schema["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    assert schema["paths"]["/query"]["post"]["security"] == [{"bearer": []}]
    assert "security" not in schema["paths"]["/health"]["get"]


def test_path_indexing_disabled_without_roots(http: httpx.Client, tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("hello")
    response = http.post("/index", json={"path": str(tmp_path / "a.md")})
    assert response.status_code == 403
    error = response.json()
    assert error["code"] == "forbidden"
    assert "--root" in error["hint"]  # the server's operator fixes this one


def test_unknown_named_collection_404_once_collections_exist(http: httpx.Client) -> None:
    added = http.post(
        "/index", json={"documents": [{"id": "l1", "text": "dragons"}], "collection": "lore"}
    )
    assert added.status_code == 200
    assert http.post("/query", json={"query": "dragons", "collection": "lore"}).json()["results"]
    response = http.post("/query", json={"query": "dragons", "collection": "nope"})
    assert response.status_code == 404, response.text
    assert "lore" in response.json()["hint"]
    unnamed = http.post("/query", json={"query": "dragons"})  # "default" was never created
    assert unnamed.status_code == 200 and unnamed.json()["results"] == []
