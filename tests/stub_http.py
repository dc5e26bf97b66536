"""What the stand-in services (`tests.embed_server`, `tests.llm_server`) share on the wire."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from typing import Any


def send_json(handler: BaseHTTPRequestHandler, status: int, payload: Any) -> None:
    """Answer `payload` as JSON with `status`. A client that stopped waiting (the timeout
    tests) is no one to answer, not an error of the stand-in."""
    raw = json.dumps(payload).encode()
    try:
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(raw)))
        handler.end_headers()
        handler.wfile.write(raw)
    except (BrokenPipeError, ConnectionResetError):
        pass
