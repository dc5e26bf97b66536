"""Two-phase commit across a shard set, and the commit lock that gives searches a clean cut.

A write touching one shard is one ordinary transaction there. A write touching several:

1. each shard's transaction records a marker (`meta` key `2pc:<id>`) beside its changes;
2. the writer takes every participant's commit lock (an advisory lock, exclusive, in shard
   order), PREPAREs every transaction, COMMITs every prepared one, releases the locks.

A search takes each shard's commit lock in shared mode (in shard order) while it opens its
snapshots, so no snapshot is taken while some shard has a multi-shard write half committed:
it sees all of such a write or none of it. A prepared transaction seen while holding the lock
has lost its writer (a server or the writer died between the phases): `resolve` commits it if
another participant holds its marker (the write was decided), else rolls it back.
"""

from __future__ import annotations

import contextlib
import logging
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql

from ragloom.store.postgres.schema import LOCK_CLASS
from ragloom.store.sql import one

COMMIT_LOCK_CLASS = LOCK_CLASS + 1
MARKER_DAYS = 1  # markers older than this are pruned by later multi-shard writes
log = logging.getLogger("ragloom.store")


def lock_key(schema: str) -> sql.Composable:
    return sql.SQL("{}, hashtext({})").format(sql.Literal(COMMIT_LOCK_CLASS), sql.Literal(schema))


def gid_prefix(schema: str) -> str:
    return f"ragloom:{schema}:"


def new_gid(schema: str, participants: Sequence[int]) -> tuple[str, str]:
    """(global transaction id naming its participants, the marker key)."""
    token = uuid.uuid4().hex
    return f"{gid_prefix(schema)}{token}:{','.join(map(str, participants))}", f"2pc:{token}"


def parse_gid(gid: str) -> tuple[str, list[int]]:
    """(marker key, participant shards) of a global transaction id."""
    _, token, shards = gid.rsplit(":", 2)
    return f"2pc:{token}", [int(s) for s in shards.split(",") if s]


def shared_lock_sql(schema: str, wait: bool) -> str:
    """A statement taking the shard's commit lock in shared mode (`wait=False`: only if it is
    free now) that answers (taken, whether a prepared transaction of this schema waits: under
    the lock, that means its writer is gone). Run before the snapshot's BEGIN, in one round
    trip with it (`PostgresSnapshot.begin`'s `lead`)."""
    function = "pg_advisory_lock_shared" if wait else "pg_try_advisory_lock_shared"
    return (
        sql.SQL(
            "SELECT {}({})::text <> 'false', EXISTS (SELECT 1 FROM pg_prepared_xacts"
            " WHERE gid LIKE {} AND database = current_database())"
        )
        .format(sql.Identifier(function), lock_key(schema), sql.Literal(gid_prefix(schema) + "%"))
        .as_string(None)
    )


def shared_unlock_sql(schema: str) -> str:
    return sql.SQL("SELECT pg_advisory_unlock_shared({})").format(lock_key(schema)).as_string(None)


def shared_unlock(conn: psycopg.Connection, schema: str) -> None:
    conn.execute(shared_unlock_sql(schema))


def exclusive_lock(conn: psycopg.Connection, schema: str, wait: bool = True) -> bool:
    function = "pg_advisory_lock" if wait else "pg_try_advisory_lock"
    row = one(
        conn.execute(sql.SQL("SELECT {}({})").format(sql.Identifier(function), lock_key(schema)))
    )
    return row[0] is not False


def exclusive_unlock(conn: psycopg.Connection, schema: str) -> None:
    with contextlib.suppress(psycopg.Error):
        conn.execute(sql.SQL("SELECT pg_advisory_unlock({})").format(lock_key(schema)))


@dataclass
class Participant:
    """One shard's side of a write: its open transaction and an autocommit connection to
    the same primary (for the commit lock and COMMIT PREPARED)."""

    shard: int
    conn: psycopg.Connection  # the write transaction
    control: Any  # () -> psycopg.Connection in autocommit, to the shard's primary


class CommitFailed(Exception):
    """A participant failed before the decision: nothing was committed anywhere."""

    def __init__(self, shard: int, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.shard, self.cause = shard, cause


def prepare(part: Participant, gid: str) -> None:
    """The first phase on one participant: its transaction prepared as `gid`."""
    part.conn.execute(sql.SQL("PREPARE TRANSACTION {}").format(sql.Literal(gid)))


def commit_prepared(part: Participant, gid: str) -> None:
    """The second phase on one participant, through its control connection."""
    part.control().execute(sql.SQL("COMMIT PREPARED {}").format(sql.Literal(gid)))


def commit_all(schema: str, parts: Sequence[Participant], before_prepare: Any) -> list[int]:
    """Commit several shards' transactions atomically (shards in ascending order). Returns
    the shards whose COMMIT PREPARED failed after the decision (each finished later by
    `resolve`); raises `CommitFailed` when the write was rolled back everywhere."""
    gid, marker = new_gid(schema, [p.shard for p in parts])
    locked: list[psycopg.Connection] = []
    prepared: list[Participant] = []
    try:
        for part in parts:
            try:
                part.conn.execute(
                    "INSERT INTO meta (key, value) VALUES (%s, %s)", (marker, int(time.time()))
                )
                part.conn.execute(
                    "DELETE FROM meta WHERE key LIKE '2pc:%%' AND value < %s",
                    (int(time.time()) - MARKER_DAYS * 86400,),
                )
                before_prepare(part)
                control = part.control()
                exclusive_lock(control, schema)
                locked.append(control)
            except BaseException as exc:
                raise CommitFailed(part.shard, exc) from exc
        for part in parts:
            try:
                prepare(part, gid)
                prepared.append(part)
            except BaseException as exc:
                raise CommitFailed(part.shard, exc) from exc
    except CommitFailed:
        for part in parts:
            with contextlib.suppress(Exception):
                if part in prepared:
                    part.control().execute(sql.SQL("ROLLBACK PREPARED {}").format(sql.Literal(gid)))
                else:
                    part.conn.rollback()
        for control in locked:
            exclusive_unlock(control, schema)
        raise
    unfinished: list[int] = []
    for part in parts:  # decided: every participant prepared
        try:
            commit_prepared(part, gid)
        except psycopg.Error:
            unfinished.append(part.shard)
    for control in locked:
        exclusive_unlock(control, schema)
    return unfinished


def resolve(schema: str, controls: dict[int, Any], shard: int) -> list[str]:
    """Finish the orphaned prepared transactions of one shard: commit those another
    participant committed (its marker is there), roll back those none did. Holds every
    reachable participant's commit lock meanwhile. Returns what it did."""
    done: list[str] = []
    conn = controls[shard]()
    gids = [
        r[0]
        for r in conn.execute(
            "SELECT gid FROM pg_prepared_xacts WHERE gid LIKE %s AND database = current_database()",
            (gid_prefix(schema) + "%",),
        ).fetchall()
    ]
    for gid in gids:
        marker, participants = parse_gid(gid)
        others = sorted(set(participants) | {shard})
        held: list[psycopg.Connection] = []
        try:
            committed, unknown = False, False
            for member in others:
                try:
                    control = controls[member]()
                    exclusive_lock(control, schema)
                    held.append(control)
                    found = control.execute("SELECT 1 FROM meta WHERE key = %s", (marker,))
                    committed = committed or found.fetchone() is not None
                except (psycopg.Error, KeyError):
                    unknown = True
            if not committed and unknown:
                continue  # a participant that may have committed cannot be asked now
            verb = "COMMIT PREPARED" if committed else "ROLLBACK PREPARED"
            finished = False  # by this call (another resolver may have been first)
            for member in others:
                with contextlib.suppress(psycopg.Error, KeyError):
                    controls[member]().execute(
                        sql.SQL("{} {}").format(sql.SQL(verb), sql.Literal(gid))
                    )
                    finished = finished or member == shard
            if finished:
                done.append(f"{verb.split()[0].lower()} {gid}")
                log.warning("shard %d: orphaned prepared transaction finished: %s", shard, done[-1])
        finally:
            for control in held:
                exclusive_unlock(control, schema)
    return done
