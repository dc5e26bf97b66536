"""`ragloom serve --token X` keeps the ASGI lifespan: the token check lets non-HTTP scopes
through, so startup (warm-up, the background vector backfill) and shutdown still run."""

from __future__ import annotations

import time
from pathlib import Path

import httpx

from tests.embed_server import EmbedServer
from tests.server_launch import ServerProcess, free_port

TOKEN = "lifespan-token"


def test_token_server_runs_startup_backfill_and_shutdown(tmp_path: Path) -> None:
    port = free_port()
    env = {
        "RAGLOOM_EMBEDDER": f"openai:m@http://127.0.0.1:{port}/v1?cooldown=0",
        "RAGLOOM_PENDING_RETRY": "0.3",
    }
    server = ServerProcess(tmp_path / "i.db", token=TOKEN, env=env)
    try:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        http = httpx.Client(base_url=server.url, headers=headers, timeout=30)
        docs = [{"id": "a", "text": "the silver key"}, {"id": "b", "text": "a copper lock"}]
        indexed = http.post("/index", json={"documents": docs})
        assert indexed.status_code == 200 and indexed.json()["pending"] == 2  # service down
        with EmbedServer(port=port):  # the service comes back: the lifespan's filler embeds
            deadline = time.monotonic() + 20
            while http.get("/stats").json()["pending"] and time.monotonic() < deadline:
                time.sleep(0.2)
            assert http.get("/stats").json()["pending"] == 0, server.output()
        assert "Application startup complete" in server.output()
        server.process.terminate()
        server.process.wait(timeout=15)
        log = server.output()
        assert "Application shutdown complete" in log, log
        assert "lifespan" not in log.lower(), log  # no "lifespan protocol unsupported"
    finally:
        server.stop()
