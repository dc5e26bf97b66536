"""Reading from replicas without ever reading older than this process's own writes.

After a write commits on the primary, the store records the primary's WAL position. A search
then uses its replica connection only once that replica's replay position
(`pg_last_wal_replay_lsn()`) has reached it, waiting a bounded time; otherwise it reads from
the primary. Other processes' writes show up on a replica with the replica's own lag
(bounded staleness), reported per host by `replication_status`.
"""

from __future__ import annotations

import contextlib
import re
import threading
import time
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from ragloom.store.sql import one

POLL = 0.002  # seconds between replay-position checks while waiting
_LSN = re.compile(r"^[0-9A-F]{1,8}/[0-9A-F]{1,8}$")


def lsn_value(lsn: str) -> int:
    """'16/B374D848' -> a comparable integer."""
    high, low = lsn.split("/")
    return (int(high, 16) << 32) + int(low, 16)


class WriteMark:
    """The newest WAL position this process has committed at (thread-safe)."""

    def __init__(self) -> None:
        self._lsn = 0
        self._text: str | None = None
        self.generation = -1  # the newest generation this process committed (-1: none)
        self._lock = threading.Lock()

    def advance(self, lsn: str | None, generation: int = 0) -> None:
        with self._lock:
            self.generation = max(self.generation, generation)
            if lsn is None or not _LSN.match(lsn):
                return
            value = lsn_value(lsn)
            if value > self._lsn:
                self._lsn, self._text = value, lsn

    @property
    def position(self) -> tuple[int, str | None]:
        return self._lsn, self._text


def caught_up(conn: psycopg.Connection, wanted: int, wanted_text: str, seconds: float) -> bool:
    """Has this standby connection replayed up to `wanted`? Polls for up to `seconds`."""
    deadline = time.monotonic() + seconds
    while True:
        replayed = one(conn.execute("SELECT pg_last_wal_replay_lsn()::text"))[0]
        if replayed is not None and lsn_value(replayed) >= wanted:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL)


def is_standby(conn: psycopg.Connection) -> bool:
    return bool(one(conn.execute("SELECT pg_is_in_recovery()"))[0])


def single_hosts(conninfo: str) -> list[tuple[str, str]]:
    """(host:port, conninfo for that host alone) for every host of a libpq URL."""
    params = conninfo_to_dict(conninfo)
    for key in ("target_session_attrs", "load_balance_hosts"):
        params.pop(key, None)
    hosts = str(params.pop("host", "") or "").split(",")
    ports = str(params.pop("port", "") or "").split(",")
    if len(ports) == 1:
        ports = ports * len(hosts)
    out = []
    for host, port in zip(hosts, ports):
        name = f"{host}:{port}" if port else host
        alone = {**params, "host": host, **({"port": port} if port else {})}
        out.append((name, make_conninfo("", **alone)))
    return out


def replication_status(conninfo: str, timeout: int = 1) -> list[dict[str, Any]]:
    """Each host of the URL: its role and, for a standby, how far its replay is behind."""
    hosts = single_hosts(conninfo)
    rows: list[dict[str, Any]] = []
    primary_lsn: int | None = None
    for name, info in hosts:
        entry: dict[str, Any] = {"host": name, "reachable": False}
        try:
            with psycopg.connect(info, connect_timeout=timeout, autocommit=True) as conn:
                standby, current, replayed, seconds = one(
                    conn.execute(
                        "SELECT pg_is_in_recovery(),"
                        " CASE WHEN pg_is_in_recovery() THEN NULL"
                        "  ELSE pg_current_wal_lsn()::text END,"
                        " pg_last_wal_replay_lsn()::text,"
                        " extract(epoch FROM now() - pg_last_xact_replay_timestamp())::float8"
                    )
                )
        except psycopg.Error as exc:
            entry["error"] = str(exc).strip().splitlines()[0] if str(exc).strip() else "down"
            rows.append(entry)
            continue
        entry.update(reachable=True, role="replica" if standby else "primary")
        if standby:
            entry["replay_lsn"] = replayed
            entry["last_replay_seconds_ago"] = round(seconds, 3) if seconds is not None else None
        else:
            primary_lsn = lsn_value(current)
            entry["wal_lsn"] = current
        rows.append(entry)
    for entry in rows:
        if entry.get("role") == "replica" and primary_lsn is not None and entry["replay_lsn"]:
            entry["lag_bytes"] = max(0, primary_lsn - lsn_value(entry["replay_lsn"]))
    return rows


def current_lsn(conn: psycopg.Connection) -> str | None:
    """The primary's WAL insert position right after a commit (None if unknown)."""
    with contextlib.suppress(psycopg.Error):
        return one(conn.execute("SELECT pg_current_wal_insert_lsn()::text"))[0]
    return None
