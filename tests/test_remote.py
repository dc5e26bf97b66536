"""The shared remote-call rules over real loopback HTTP: timeouts, one retry, typed errors."""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ragloom.errors import EmbeddingOffline, EmbedFailed, InputError
from ragloom.remote import RemoteService, Timeouts, parse_service_spec


class _Server:
    """Answers POSTs according to `mode`: ok, 500, malformed, hang, fail_once."""

    def __init__(self) -> None:
        self.mode = "ok"
        self.calls = 0
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                self.rfile.read(int(self.headers["Content-Length"]))
                owner.calls += 1
                if owner.mode == "hang":
                    time.sleep(3)
                if owner.mode == "500" or (owner.mode == "fail_once" and owner.calls == 1):
                    return self._send(500, b'{"error": "boom"}')
                if owner.mode == "malformed":
                    return self._send(200, b"not json")
                self._send(200, json.dumps({"value": 42}).encode())

            def _send(self, status: int, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    s = _Server()
    yield s
    s.close()


def _service(url: str, **timeouts: float) -> RemoteService:
    settings = Timeouts(**{"retry_delay": 0.05, "cooldown": 0.0, **timeouts})
    return RemoteService(url, EmbeddingOffline, EmbedFailed, "the test service", settings)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_answer_is_parsed(server):
    assert _service(server.url).post_json("/x", {}, lambda body: body["value"]) == 42


def test_one_retry_recovers_a_passing_failure(server):
    server.mode = "fail_once"
    assert _service(server.url).post_json("/x", {}, lambda body: body["value"]) == 42
    assert server.calls == 2


def test_refused_connection_is_offline_after_one_retry():
    service = _service(f"http://127.0.0.1:{_free_port()}")
    with pytest.raises(EmbeddingOffline, match="cannot reach the test service"):
        service.post_json("/x", {}, lambda body: body)


@pytest.mark.parametrize("mode", ["500", "malformed"])
def test_bad_answers_are_failed_errors(server, mode):
    server.mode = mode
    with pytest.raises(EmbedFailed) as caught:
        _service(server.url).post_json("/x", {}, lambda body: body["value"])
    assert server.calls == 2
    if mode == "500":
        assert caught.value.status == 500


def test_hung_service_times_out_within_read_timeout_plus_retry(server):
    server.mode = "hang"
    started = time.monotonic()
    with pytest.raises(EmbedFailed, match="did not answer within 0.3 s"):
        _service(server.url, query=0.3).post_json("/x", {}, lambda b: b, interactive=True)
    assert time.monotonic() - started < 10  # 2 x 0.3 s + 0.05 s; the service never answers


def test_cooldown_skips_a_service_that_just_failed(server):
    server.mode = "500"
    service = _service(server.url, cooldown=30.0)
    with pytest.raises(EmbedFailed):
        service.post_json("/x", {}, lambda b: b)
    calls = server.calls
    with pytest.raises(EmbedFailed, match="failed moments ago"):
        service.post_json("/x", {}, lambda b: b)
    assert server.calls == calls  # not called again during the cooldown


def test_spec_options_are_parsed_and_removed_from_the_url():
    spec = parse_service_spec(
        "openai:text-embedding-3-small@http://h:1/v1?timeout=2&connect_timeout=0.5",
        ("openai", "ollama"),
        "help",
    )
    assert (spec.provider, spec.model, spec.base_url) == (
        "openai",
        "text-embedding-3-small",
        "http://h:1/v1",
    )
    timeouts = Timeouts().with_options(spec.options)
    assert (timeouts.read, timeouts.connect) == (2.0, 0.5)
    with pytest.raises(InputError):
        Timeouts().with_options({"timeout": "soon"})
    with pytest.raises(InputError):
        parse_service_spec("openai:m@ftp://h", ("openai",), "help")
