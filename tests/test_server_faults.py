"""Failures: unexpected errors answer a generic 500 and leave the index whole; a broken index
file answers 503; bad `serve` options are refused before the server starts."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import httpx
import pytest
import uvicorn
from click.testing import CliRunner

import ragloom
import ragloom.index
from ragloom.cli import cli
from ragloom.server.app import create_app
from ragloom.server.launch import ServerProcess, free_port
from ragloom.server.settings import DEFAULT_MAX_BODY, ServerSettings
from ragloom.store.sqlite.write import SQLiteWrite


@pytest.fixture
def live(tmp_path: Path):
    """An in-process uvicorn on a loopback port, so a test can plant faults in the library."""
    app = create_app(ServerSettings.build(tmp_path / "index.db"))
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="critical"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
        yield client
    server.should_exit = True
    thread.join(timeout=10)


def test_unexpected_error_is_generic_500(live: httpx.Client, monkeypatch) -> None:
    def explode(*args, **kwargs):
        raise RuntimeError("internal detail /secret/path that must not leak")

    monkeypatch.setattr(ragloom.index.IndexReading, "search", explode)
    response = live.post("/query", json={"query": "anything"})
    assert response.status_code == 500
    body = response.json()
    assert body["ok"] is False and body["code"] == "internal"
    assert "secret" not in response.text and "Traceback" not in response.text
    assert "RuntimeError" not in response.text


def test_failed_write_leaves_index_whole(live: httpx.Client, monkeypatch) -> None:
    """A crash inside the write transaction rolls back: the old version stays, nothing half-done."""
    old = {"documents": [{"id": "d1", "text": "original heron text"}]}
    assert live.post("/index", json=old).status_code == 200
    real_insert = SQLiteWrite._insert

    def insert_then_crash(self, collection, documents, postings):
        real_insert(self, collection, documents, postings)
        raise RuntimeError("disk caught fire")

    monkeypatch.setattr(SQLiteWrite, "_insert", insert_then_crash)
    new = {
        "documents": [
            {"id": "d1", "text": "replacement crane text"},
            {"id": "d2", "text": "brand new stork text"},
        ]
    }
    response = live.post("/index", json=new)
    assert response.status_code == 500 and "fire" not in response.text
    monkeypatch.undo()
    assert live.post("/query", json={"query": "heron"}).json()["results"][0]["document_id"] == "d1"
    for word in ("crane", "stork"):
        assert live.post("/query", json={"query": word}).json()["results"] == []
    assert live.get("/documents").json()["total"] == 1
    again = live.post("/index", json=new).json()  # and the server still writes afterwards
    assert again["documents"] == 2


def test_unusable_index_file_is_503(tmp_path: Path) -> None:
    broken = tmp_path / "broken.db"
    broken.write_bytes(b"this is not a sqlite database at all" * 100)
    with ServerProcess(broken) as server, httpx.Client(base_url=server.url, timeout=30) as http:
        health = http.get("/health")
        assert health.status_code == 503
        assert health.json()["ok"] is False and health.json()["index"]["open"] is False
        for response in (
            http.post("/query", json={"query": "x"}),
            http.post("/index", json={"documents": [{"id": "a", "text": "b"}]}),
            http.get("/stats"),
        ):
            assert response.status_code == 503, response.text
            assert response.json()["code"] == "store_unavailable"


def test_serve_refuses_bad_options(tmp_path: Path) -> None:
    runner = CliRunner()
    missing_root = runner.invoke(
        cli, ["--index", str(tmp_path / "i.db"), "serve", "--root", str(tmp_path / "nope")]
    )
    assert missing_root.exit_code != 0 and "does not exist" in missing_root.output
    bad_port = runner.invoke(cli, ["serve", "--port", "70000"])
    assert bad_port.exit_code != 0
    assert runner.invoke(cli, ["serve", "--max-body", "0"]).exit_code != 0


def test_settings_defaults_and_root_resolution(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "alias").symlink_to(tmp_path / "real", target_is_directory=True)
    settings = ServerSettings.build(tmp_path / "i.db", roots=[tmp_path / "alias"], token="")
    assert settings.max_body == DEFAULT_MAX_BODY == 10 * 1024 * 1024
    assert settings.roots == ((tmp_path / "real").resolve(),)
    assert settings.token is None
