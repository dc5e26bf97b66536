"""The inspector's files and the document endpoint it uses, over real HTTP."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

import ragloom
from ragloom.server.inspector import ASSETS
from tests.server_launch import ServerProcess

TOKEN = "inspect-secret"


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory):
    path = tmp_path_factory.mktemp("inspector") / "index.db"
    with ragloom.Index(path, embedder=None) as index:
        index.add(
            [ragloom.Document("notes/a b.md", "First line.\n\nMira forged the silver key.")],
            "lore",
        )
    with ServerProcess(path, token=TOKEN, env={"RAGLOOM_EMBEDDER": "none"}) as server:
        yield server


def test_page_and_assets_are_served_without_the_token(live: ServerProcess) -> None:
    page = httpx.get(f"{live.url}/ui")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert "default-src 'self'" in page.headers["content-security-policy"]
    for name in ("inspector.js", "inspector.css"):
        assert f"/ui/{name}" in page.text
        asset = httpx.get(f"{live.url}/ui/{name}")
        assert asset.status_code == 200 and asset.headers["content-type"] == ASSETS[name]
    assert "http://" not in page.text and "https://" not in page.text  # no CDN, nothing remote
    assert httpx.get(f"{live.url}/ui/").status_code == 308
    assert httpx.get(f"{live.url}/ui/../stats").status_code == 401  # normalised: not a UI file
    missing = httpx.get(f"{live.url}/ui/secrets.txt")
    assert missing.status_code == 404
    assert httpx.get(f"{live.url}/stats").status_code == 401  # the data still needs the token


def test_assets_ship_in_the_package() -> None:
    static = Path(ragloom.__file__).parent / "server" / "static"
    assert sorted(p.name for p in static.iterdir()) == sorted(ASSETS)


def test_document_text_for_span_highlighting(live: ServerProcess) -> None:
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=live.url, headers=auth) as http:
        hit = http.post("/query", json={"query": "silver key", "collection": "lore"}).json()
        hit = hit["results"][0]
        answer = http.get("/documents/notes/a%20b.md", params={"collection": "lore"})
        assert answer.status_code == 200
        doc = answer.json()
        assert doc["id"] == "notes/a b.md" and doc["collection"] == "lore"
        assert doc["text"][hit["start"] : hit["end"]] == hit["chunk"]
        assert http.get("/documents/nope", params={"collection": "lore"}).status_code == 404
        assert http.get("/documents/notes/a%20b.md").status_code == 404  # other collection
