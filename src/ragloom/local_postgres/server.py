"""One local PostgreSQL server: its data folder, TCP port and settings; start, stop, status."""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path

from ragloom.local_postgres.system import give_to_server_user, program, run


@dataclass
class LocalServer:
    """One PostgreSQL server (primary or standby) with its data folder and TCP port."""

    data: Path
    port: int
    settings: dict[str, str] = field(default_factory=dict)

    @property
    def log(self) -> Path:
        return self.data.parent / f"{self.data.name}.log"

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"

    def url(self, database: str = "postgres", **params: str) -> str:
        query = "&".join(f"{k}={v}" for k, v in params.items())
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}" + (
            f"?{query}" if query else ""
        )

    def start(self) -> None:
        """Start the server on its port and wait until it accepts connections."""
        options = f"-h 127.0.0.1 -p {self.port} -c unix_socket_directories=''"
        for key, value in self.settings.items():
            options += " -c " + shlex.quote(f"{key}={value}")  # pg_ctl runs it through sh
        self.log.touch()
        give_to_server_user(self.log)
        pg_ctl = program("pg_ctl")
        run([pg_ctl, "-D", str(self.data), "-l", str(self.log), "-w", "-o", options, "start"])

    def stop(self, mode: str = "fast") -> None:
        """Stop the server if it runs (`fast`: roll back open transactions, then shut down)."""
        with contextlib.suppress(RuntimeError):
            run([program("pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop"])

    def pid(self) -> int | None:
        """The postmaster's pid as its pid file records it (the file may be stale)."""
        try:
            return int((self.data / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def serving_port(self) -> int | None:
        """The port the running server listens on, or None when it does not run."""
        if run([program("pg_ctl"), "-D", str(self.data), "status"], check=False).returncode:
            return None
        try:
            return int((self.data / "postmaster.pid").read_text().splitlines()[3])
        except (OSError, ValueError, IndexError):
            return None

    def kill(self) -> None:
        """SIGKILL the postmaster (a crash, as a power cut would leave it)."""
        pid = self.pid()
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            for _ in range(100):
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.05)
            time.sleep(0.2)  # its children notice the postmaster's death and exit

    def running(self) -> bool:
        """Something accepts connections on the server's port."""
        with socket.socket() as sock:
            sock.settimeout(0.5)
            return sock.connect_ex(("127.0.0.1", self.port)) == 0
