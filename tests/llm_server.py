"""A small real HTTP server speaking the OpenAI chat-completions, Ollama chat, `/v1/rerank`
(Cohere/Jina/vLLM/Infinity) and text-embeddings-inference `/rerank` wire protocols, with
scripted deterministic answers and switchable failure modes (the LLM and rerank services
ragloom talks to cannot run here)."""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .stub_http import send_json

Responder = Callable[[list[dict[str, str]]], str]


def overlap_score(query: str, document: str) -> float:
    """Deterministic relevance: the share of the query's words found in the document."""
    words = set(re.findall(r"\w+", query.lower()))
    found = set(re.findall(r"\w+", document.lower()))
    return len(words & found) / len(words) if words else 0.0


def free_port() -> int:
    """A loopback port nothing listens on (for refused connections)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LLMServer:
    """Start with `with LLMServer() as server:`; `server.url` is its base address.

    Chat replies come from `replies` (a queue, first in first out) while it holds any, else
    from `responder(messages)`. `mode`: ok | 500 | malformed (a body that breaks the
    protocol) | hang (answers after `hang_seconds`) | fail_once (one 500, then ok).
    """

    def __init__(self) -> None:
        self.mode = "ok"
        self.hang_seconds = 3.0
        self.replies: list[str] = []
        self.responder: Responder = lambda messages: "{}"
        self.scorer: Callable[[str, str], float] = overlap_score
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with owner._lock:
                    owner.requests.append((self.path, body))
                    owner.headers.append(dict(self.headers))
                    mode = owner.mode
                    if mode == "fail_once":
                        owner.mode = "ok"
                if mode in ("500", "fail_once"):
                    return self._send(500, {"error": "boom"})
                if mode == "hang":
                    time.sleep(owner.hang_seconds)
                if mode == "malformed":
                    return self._send(200, {"unexpected": True})
                try:
                    payload = owner._answer(self.path, body)
                except LookupError:
                    return self._send(404, {"error": "not found"})
                return self._send(200, payload)

            def _send(self, status: int, payload: Any) -> None:
                send_json(self, status, payload)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def _reply(self, messages: list[dict[str, str]]) -> str:
        with self._lock:
            if self.replies:
                return self.replies.pop(0)
        return self.responder(messages)

    def _answer(self, path: str, body: dict[str, Any]) -> Any:
        if path == "/v1/chat/completions":
            text = self._reply(body["messages"])
            return {
                "id": "chatcmpl-test",
                "object": "chat.completion",
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": "stop",
                    }
                ],
            }
        if path == "/api/chat":
            text = self._reply(body["messages"])
            return {
                "model": body["model"],
                "message": {"role": "assistant", "content": text},
                "done": True,
            }
        if path == "/v1/rerank":
            scores = [self.scorer(body["query"], doc) for doc in body["documents"]]
            order = sorted(range(len(scores)), key=lambda i: -scores[i])
            top = order[: body.get("top_n") or len(order)]
            return {
                "model": body.get("model"),
                "results": [{"index": i, "relevance_score": scores[i]} for i in top],
            }
        if path == "/rerank":  # text-embeddings-inference
            scores = [self.scorer(body["query"], text) for text in body["texts"]]
            order = sorted(range(len(scores)), key=lambda i: -scores[i])
            return [{"index": i, "score": scores[i]} for i in order]
        raise LookupError(path)

    def chat_requests(self) -> list[dict[str, Any]]:
        """Bodies of the chat requests received so far."""
        return [b for p, b in self.requests if p in ("/v1/chat/completions", "/api/chat")]

    def __enter__(self) -> LLMServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
