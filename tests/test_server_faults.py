"""Failures: unexpected errors answer a generic 500 and leave the index whole; a broken index
file answers 503; bad `serve` options are refused before the server starts."""

from __future__ import annotations

import os
import sqlite3
import subprocess
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
from ragloom.errors import StorageError, StorageFull, StoreError
from ragloom.server.app import create_app
from ragloom.server.settings import DEFAULT_MAX_BODY, ServerSettings
from ragloom.store.sqlite.write import SQLiteWrite
from tests.server_launch import ServerProcess, free_port


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
        assert health.status_code == 503 and health.json() == {"ok": False}
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


@pytest.mark.parametrize(
    ("failure", "error", "status"),
    [
        ("database or disk is full", StorageFull, 507),
        ("disk I/O error", StorageError, 503),
    ],
    ids=["full", "io-error"],
)
def test_storage_errors_answer_their_typed_status(
    live: httpx.Client, monkeypatch, failure: str, error: type[StoreError], status: int
) -> None:
    """SQLite failing at commit (a full disk, an I/O error) reaches the caller typed, with the
    old version intact; the Python client raises the same class."""
    from ragloom.store.sqlite.write import SQLiteWrite

    assert live.post("/index", json={"documents": [{"id": "d1", "text": "heron"}]}).is_success
    real_finish = SQLiteWrite.finish

    def fail(self):
        real_finish(self)
        raise sqlite3.OperationalError(failure)

    monkeypatch.setattr(SQLiteWrite, "finish", fail)
    response = live.post("/index", json={"documents": [{"id": "d2", "text": "stork"}]})
    assert response.status_code == status, response.text
    assert response.json()["code"] == error.code
    with ragloom.Client(str(live.base_url)) as client, pytest.raises(error) as raised:
        client.add([{"id": "d3", "text": "crane"}])
    assert raised.value.code == error.code and raised.value.status == status
    monkeypatch.undo()
    assert live.post("/query", json={"query": "heron"}).json()["results"][0]["document_id"] == "d1"
    assert live.post("/query", json={"query": "stork crane"}).json()["results"] == []


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")
def test_a_full_disk_over_http_is_507(tmp_path: Path) -> None:
    """The server's index on a 1 MB file system: writes fill it, the answer is 507."""
    mount = tmp_path / "small"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], check=True)
    try:
        env = {"RAGLOOM_EMBEDDER": "none"}
        with (
            ServerProcess(mount / "i.db", env=env) as server,
            httpx.Client(base_url=server.url, timeout=30) as http,
        ):
            response = None
            for i in range(400):
                words = " ".join(f"w{i}x{j}" for j in range(300))
                body = {"documents": [{"id": f"d{i}-{j}", "text": words} for j in range(5)]}
                response = http.post("/index", json=body)
                if response.status_code != 200:
                    break
            assert response is not None and response.status_code == 507, response.text
            assert response.json()["code"] == "storage_full"
            assert http.post("/query", json={"query": "w0x1"}).status_code == 200
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)
