"""A small real HTTP server speaking the OpenAI `/v1/embeddings` and Ollama `/api/embed` and
`/api/embeddings` (before Ollama 0.2) wire protocols, backed by a deterministic function,
with switchable failure modes."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np

from .stub_http import send_json

DIMENSION = 16


def fake_vector(text: str, dimension: int = DIMENSION) -> list[float]:
    """Deterministic vector from word hashes: texts sharing words get similar vectors."""
    vec = np.zeros(dimension)
    for word in text.lower().split():
        digest = hashlib.sha256(word.encode()).digest()
        vec[digest[0] % dimension] += 1.0
    return vec.tolist()


class EmbedServer:
    """Start with `with EmbedServer() as server:`; `server.url` is its base address."""

    def __init__(self, port: int = 0) -> None:
        # ok | 500 | malformed | wrong_count | wrong_dim | slow | hang | fail_once
        self.mode = "ok"
        self.delay = 0.0  # seconds before each answer
        self.legacy_ollama = False  # answer 404 on /api/embed, speak only /api/embeddings
        self.requests: list[dict] = []
        self.paths: list[str] = []
        self.headers: list[dict] = []
        self._release = threading.Event()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.requests.append(body)
                owner.paths.append(self.path)
                owner.headers.append(dict(self.headers))
                mode = owner.mode
                time.sleep(owner.delay)
                if owner.legacy_ollama and self.path == "/api/embed":
                    return self._send(404, {"error": "404 page not found"})
                if mode == "fail_once":
                    owner.mode = "ok"
                    return self._send(500, {"error": "temporary"})
                if mode == "500":
                    return self._send(500, {"error": "boom"})
                if mode == "slow":
                    time.sleep(2)
                if mode == "hang":  # accepts, never answers (until the server stops)
                    owner._release.wait(30)
                    return None
                if self.path == "/api/embeddings" and owner.legacy_ollama:
                    if mode == "malformed":
                        return self._send(200, {"unexpected": True})
                    return self._send(200, {"embedding": fake_vector(body["prompt"])})
                inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
                vectors = [fake_vector(t) for t in inputs]
                if mode == "wrong_dim":
                    vectors = [v + [0.5] for v in vectors]
                if mode == "wrong_count":
                    vectors = vectors[:-1]
                if mode == "malformed":
                    return self._send(200, {"unexpected": True})
                if self.path == "/v1/embeddings":
                    data = [
                        {"object": "embedding", "index": i, "embedding": v}
                        for i, v in reversed(list(enumerate(vectors)))
                    ]
                    return self._send(200, {"object": "list", "data": data, "model": body["model"]})
                if self.path == "/api/embed":
                    return self._send(200, {"model": body["model"], "embeddings": vectors})
                return self._send(404, {"error": "not found"})

            def _send(self, status: int, payload: dict) -> None:
                send_json(self, status, payload)

        self._server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> EmbedServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self._release.set()
        self._server.shutdown()
        self._server.server_close()
