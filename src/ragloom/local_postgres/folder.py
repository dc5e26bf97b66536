"""A folder's servers across commands: `start` reuses what runs (the same URL again), restarts
what was stopped on its old ports when they are free, `stop` and `status` find them again.

The folder records its servers in `ragloom-postgres.json` (data folders, ports, settings),
one entry per cluster (a primary and its standbys), so that a set of several clusters
(shards) is a longer list, not another format.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragloom.local_postgres.cluster import BASE_SETTINGS, LocalCluster, start_primary
from ragloom.local_postgres.server import LocalServer
from ragloom.local_postgres.system import free_port, port_free

STATE_FILE = "ragloom-postgres.json"
LOCK_FILE = ".ragloom-postgres.lock"


class LauncherError(Exception):
    """A request the folder's servers cannot meet; the message says what to do instead."""


@dataclass
class ServerSet:
    """Every cluster a folder holds: one, or one per shard of a shard set."""

    folder: Path
    clusters: list[LocalCluster]

    def url(self, database: str = "postgres") -> str:
        """The URL to give `--store`: the one cluster's multi-host URL, or with several
        clusters the shard set's (`postgresql+shards://`, each shard with its standbys)."""
        if len(self.clusters) == 1:
            return self.clusters[0].url(database)
        bodies = [c.url(database).split("://", 1)[1] for c in self.clusters]
        return "postgresql+shards://" + ";".join(bodies)

    def servers(self) -> Iterator[tuple[str, LocalServer]]:
        """(name, server) of every server, primaries before their standbys."""
        for cluster in self.clusters:
            for server in cluster.servers:
                yield str(server.data.relative_to(self.folder)), server


def start(
    folder: Path | str, standbys: int | None = None, delay_ms: int = 0, shards: int | None = None
) -> ServerSet:
    """Start the folder's servers, or create them (a primary and `standbys` standbys; with
    `shards`, that many such clusters in `shard0`, `shard1`, ... making one shard set).

    Servers already running are reused as they are; `standbys` above the folder's count
    adds standbys, below it is refused (stop and remove the folder to start smaller);
    `shards` above the folder's count adds shards at the end (then `ragloom add-shard`)."""
    folder = Path(folder).absolute()
    with _locked(folder):
        found = _load(folder)
        if found is None:
            if shards is None:
                found = ServerSet(folder, [start_primary(folder)])
            else:
                found = ServerSet(
                    folder, [start_primary(folder / f"shard{i}") for i in range(shards)]
                )
        else:
            for cluster in found.clusters:
                _ensure_running(cluster)
        if shards is not None and shards != len(found.clusters):
            sharded = found.clusters[0].primary.data.parent != folder
            if shards < len(found.clusters) or not sharded:
                _save(found)
                raise LauncherError(
                    f"{folder} holds {len(found.clusters)} cluster(s) "
                    f"{'as shards' if sharded else 'not as shards'}; stop it and remove the "
                    f"folder to start {shards} shard(s)"
                )
            while len(found.clusters) < shards:
                found.clusters.append(start_primary(folder / f"shard{len(found.clusters)}"))
        for cluster in found.clusters:
            if standbys is not None and standbys < len(cluster.standbys):
                _save(found)
                raise LauncherError(
                    f"{folder} already holds a primary with {len(cluster.standbys)} standby(s); "
                    f"stop it and remove the folder to start one with {standbys}"
                )
            while standbys is not None and len(cluster.standbys) < standbys:
                cluster.add_standby(delay_ms)
        _save(found)
        return found


def stop(folder: Path | str) -> list[tuple[str, bool]]:
    """Stop every server of the folder (standbys first); (name, was running) of each."""
    folder = Path(folder).absolute()
    _require(folder)
    with _locked(folder):
        found = _require(folder)
        report = []
        for name, server in reversed(list(found.servers())):
            running = server.serving_port() is not None
            if running:
                server.stop("fast")
            report.append((name, running))
        return report[::-1]


def status(folder: Path | str) -> dict[str, Any]:
    """Each server's name, port, pid and whether it runs; the URL when they all do."""
    found = _require(Path(folder).absolute())
    servers = []
    for name, server in found.servers():
        port = server.serving_port()
        servers.append(
            {
                "name": name,
                "port": port or server.port,
                "running": port is not None,
                "pid": server.pid() if port is not None else None,
            }
        )
    everything = all(s["running"] for s in servers)
    return {
        "folder": str(found.folder),
        "running": everything,
        "url": found.url() if everything else None,
        "servers": servers,
    }


def _ensure_running(cluster: LocalCluster) -> None:
    """Start what is stopped: the primary first, on its old port when it is free."""
    for server in cluster.servers:
        port = server.serving_port()
        if port is not None:
            server.port = port
            continue
        if not port_free(server.port):
            server.port = free_port()
        if server is cluster.primary:
            server.start()
        else:
            cluster.start_standby(server)


def _require(folder: Path) -> ServerSet:
    found = _load(folder)
    if found is None:
        raise LauncherError(
            f"no local PostgreSQL in {folder}; start one with "
            f"`python -m ragloom.local_postgres start {folder}`"
        )
    return found


def _load(folder: Path) -> ServerSet | None:
    """The folder's recorded servers; a folder from before the record is read from its data
    folders (`primary`, `standby1`, ...) with the default settings."""
    path = folder / STATE_FILE
    if path.exists():
        state = json.loads(path.read_text())
        clusters = [
            LocalCluster(
                (folder / entry["primary"]["data"]).parent,  # a shard's own folder
                _server(folder, entry["primary"]),
                [_server(folder, s) for s in entry["standbys"]],
            )
            for entry in state["clusters"]
        ]
        return ServerSet(folder, clusters)
    if not (folder / "primary" / "PG_VERSION").exists():
        return None
    primary = LocalServer(folder / "primary", free_port(), dict(BASE_SETTINGS))
    names = sorted(p.name for p in folder.glob("standby*") if (p / "PG_VERSION").exists())
    standby = {**BASE_SETTINGS, "hot_standby": "on"}
    standbys = [LocalServer(folder / n, free_port(), dict(standby)) for n in names]
    return ServerSet(folder, [LocalCluster(folder, primary, standbys)])


def _server(folder: Path, entry: dict[str, Any]) -> LocalServer:
    settings = {**BASE_SETTINGS, **entry["settings"]}  # settings added since it was made
    return LocalServer(folder / entry["data"], int(entry["port"]), settings)


def _entry(folder: Path, server: LocalServer) -> dict[str, Any]:
    settings = {k: v for k, v in server.settings.items() if k != "primary_conninfo"}
    return {"data": str(server.data.relative_to(folder)), "port": server.port, "settings": settings}


def _save(found: ServerSet) -> None:
    state = {
        "clusters": [
            {
                "primary": _entry(found.folder, c.primary),
                "standbys": [_entry(found.folder, s) for s in c.standbys],
            }
            for c in found.clusters
        ]
    }
    path = found.folder / STATE_FILE
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(state, indent=1) + "\n")
    os.replace(tmp, path)


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """One start or stop at a time per folder."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / LOCK_FILE, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield
