"""A small real HTTP server speaking the OpenAI chat-completions, Ollama chat, `/v1/rerank`
(Cohere/Jina/vLLM/Infinity) and text-embeddings-inference `/rerank` wire protocols, with
scripted deterministic answers and switchable failure modes (the LLM and rerank services
ragloom talks to cannot run here).

Chat answers stream when asked (`"stream": true`): OpenAI's as server-sent events
(`data: {chunk}` lines, tool calls as `tool_calls` deltas with their arguments in pieces,
`data: [DONE]`), Ollama's as NDJSON lines ending `"done": true`. A scripted reply is text,
or `{"content": ..., "tool_calls": [{"name": ..., "arguments": {...}}]}` for a tool call.
"""

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

Reply = str | dict[str, Any]  # text, or {"content", "tool_calls": [{"name", "arguments"}]}
Responder = Callable[[list[dict[str, Any]]], Reply]


def pieces(text: str) -> list[str]:
    """The text cut as a model streams it: a word with the space before it per piece, and a
    citation marker split in two (`[1` then `2]`) so that readers must join pieces."""
    out = re.findall(r"\s*\S+", text) or ([text] if text else [])
    cut = []
    for piece in out:
        if re.fullmatch(r"\s*\[\d+\][.,;:]?", piece) and len(piece.strip()) > 2:
            at = piece.index("[") + 2
            cut += [piece[:at], piece[at:]]
        else:
            cut.append(piece)
    return cut


def overlap_score(query: str, document: str) -> float:
    """Deterministic relevance: the share of the query's words found in the document."""
    words = set(re.findall(r"\w+", query.lower()))
    found = set(re.findall(r"\w+", document.lower()))
    return len(words & found) / len(words) if words else 0.0


CHAT_PATHS = ("/v1/chat/completions", "/api/chat")


def _sse_writer(handler: BaseHTTPRequestHandler) -> Callable[[Any], None]:
    def write(event: Any) -> None:
        handler.wfile.write(b"data: " + json.dumps(event).encode() + b"\n\n")
        handler.wfile.flush()

    return write


def _ndjson_writer(handler: BaseHTTPRequestHandler) -> Callable[[Any], None]:
    def write(event: Any) -> None:
        handler.wfile.write(json.dumps(event).encode() + b"\n")
        handler.wfile.flush()

    return write


def _openai_chunk(body: dict[str, Any], delta: dict[str, Any], finish: str | None = None) -> Any:
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion.chunk",
        "model": body["model"],
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def _openai_call_deltas(index: int, call: dict[str, Any]) -> list[dict[str, Any]]:
    """A tool call as OpenAI streams it: id and name first, the arguments in two pieces."""
    arguments = json.dumps(call.get("arguments", {}))
    half = len(arguments) // 2
    first = {"index": index, "id": f"call_{index}", "type": "function"}
    return [
        {**first, "function": {"name": call["name"], "arguments": ""}},
        {"index": index, "function": {"arguments": arguments[:half]}},
        {"index": index, "function": {"arguments": arguments[half:]}},
    ]


def _ollama_line(body: dict[str, Any], text: str, calls: list[Any] | None = None) -> Any:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = calls
    return {"model": body["model"], "message": message, "done": False}


def _ollama_call(call: dict[str, Any]) -> dict[str, Any]:
    return {"function": {"name": call["name"], "arguments": call.get("arguments", {})}}


def free_port() -> int:
    """A loopback port nothing listens on (for refused connections)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LLMServer:
    """Start with `with LLMServer() as server:`; `server.url` is its base address.

    Chat replies come from `replies` (a queue, first in first out) while it holds any, else
    from `responder(messages)`. `mode`: ok | 500 | malformed (a body that breaks the
    protocol) | hang (answers after `hang_seconds`) | fail_once (one 500, then ok) |
    stall (a stream sends its first `stall_after` pieces, then goes silent for
    `hang_seconds`) | cut (a stream sends its first `stall_after` pieces, then an error in
    the stream). Streamed pieces go out `piece_delay` seconds apart; `sent` records
    (time.monotonic(), piece) for each as it is written.
    """

    def __init__(self) -> None:
        self.mode = "ok"
        self.hang_seconds = 3.0
        self.stall_after = 2
        self.piece_delay = 0.0
        self.sent: list[tuple[float, str]] = []
        self.replies: list[Reply] = []
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
                if body.get("stream") and self.path in CHAT_PATHS:
                    return owner._stream(self, body, mode)
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

    def _reply(self, messages: list[dict[str, Any]]) -> Reply:
        with self._lock:
            if self.replies:
                return self.replies.pop(0)
        return self.responder(messages)

    def _text(self, messages: list[dict[str, Any]]) -> str:
        reply = self._reply(messages)
        return reply if isinstance(reply, str) else reply.get("content") or ""

    def _stream(self, handler: BaseHTTPRequestHandler, body: dict[str, Any], mode: str) -> None:
        """Answer a `"stream": true` chat request in its protocol's streamed form."""
        reply = self._reply(body["messages"])
        content = reply if isinstance(reply, str) else reply.get("content") or ""
        calls = [] if isinstance(reply, str) else reply.get("tool_calls") or []
        openai = handler.path == "/v1/chat/completions"
        handler.send_response(200)
        kind = "text/event-stream" if openai else "application/x-ndjson"
        handler.send_header("Content-Type", kind)
        handler.end_headers()
        write = _sse_writer(handler) if openai else _ndjson_writer(handler)
        try:
            for n, piece in enumerate(pieces(content)):
                if mode in ("stall", "cut") and n == self.stall_after:
                    if mode == "stall":
                        time.sleep(self.hang_seconds)
                    else:
                        write({"error": {"message": "the model crashed"}})
                    return
                if self.piece_delay:
                    time.sleep(self.piece_delay)
                with self._lock:
                    self.sent.append((time.monotonic(), piece))  # just before it goes out
                write(
                    _openai_chunk(body, {"content": piece}) if openai else _ollama_line(body, piece)
                )
            if openai:
                for index, call in enumerate(calls):
                    for delta in _openai_call_deltas(index, call):
                        write(_openai_chunk(body, {"tool_calls": [delta]}))
                finish = "tool_calls" if calls else "stop"
                write(_openai_chunk(body, {}, finish))
                handler.wfile.write(b"data: [DONE]\n\n")
            else:
                if calls:
                    write(_ollama_line(body, "", [_ollama_call(call) for call in calls]))
                write(
                    {
                        "model": body["model"],
                        "message": {"role": "assistant", "content": ""},
                        "done": True,
                        "done_reason": "stop",
                    }
                )
            handler.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _answer(self, path: str, body: dict[str, Any]) -> Any:
        if path == "/v1/chat/completions":
            text = self._text(body["messages"])
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
            text = self._text(body["messages"])
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
