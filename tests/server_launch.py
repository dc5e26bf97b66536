"""Start `ragloom serve` as a child process on a free loopback port (for tests and benchmarks)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import httpx

from ragloom.errors import RagloomError
from ragloom.store.open import is_url


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ServerProcess:
    """A running `ragloom serve` child; `url` is its base URL. Use as a context manager."""

    def __init__(
        self,
        index_path: str | Path,
        roots: Sequence[str | Path] = (),
        token: str | None = None,
        max_body: int | None = None,
        extra_args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        port: int | None = None,
        startup_timeout: float = 30.0,
    ) -> None:
        self.index_path = index_path if is_url(index_path) else Path(index_path)
        env = dict(env or {})
        args = [sys.executable, "-m", "ragloom.cli", "--index", str(index_path), "serve"]
        if "RAGLOOM_PORT" in env:  # let the server read its port from the environment
            self.port = int(env["RAGLOOM_PORT"])
        else:
            self.port = port or free_port()
            args += ["--port", str(self.port)]
        self.url = f"http://127.0.0.1:{self.port}"
        for root in roots:
            args += ["--root", str(root)]
        if token is not None:
            args += ["--token", token]
        if max_body is not None:
            args += ["--max-body", str(max_body)]
        args += list(extra_args)
        log_fd, log_path = tempfile.mkstemp(prefix="ragloom-serve-", suffix=".log")
        self.log_path = Path(log_path)
        try:
            self.process = subprocess.Popen(
                args, stdout=log_fd, stderr=subprocess.STDOUT, env={**os.environ, **env}
            )
        finally:
            os.close(log_fd)
        self._wait_ready(startup_timeout)

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RagloomError(f"ragloom serve exited early:\n{self.output()}")
            try:
                httpx.get(f"{self.url}/health", timeout=1.0)
                return
            except httpx.TransportError:
                time.sleep(0.05)
        self.stop()
        raise RagloomError(f"ragloom serve did not answer within {timeout}s:\n{self.output()}")

    def output(self) -> str:
        """Everything the server printed so far."""
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self) -> None:
        """Shut down gracefully (SIGTERM), then kill if it lingers."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log_path.unlink(missing_ok=True)

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
