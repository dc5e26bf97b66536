"""The writer lease of a PostgreSQL index (`ragloom.store.lease`): a session advisory lock
on a connection of its own, named after its holder (`application_name`) so that a refused
writer can say who holds it. The server drops the lock when that connection ends, however
the holding process ended."""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import psycopg

from ragloom.store.lease import holder_text, refusal, shared_lease
from ragloom.store.postgres.schema import LOCK_CLASS

LEASE_CLASS = LOCK_CLASS + 1  # advisory locks of the writer lease (one per schema)
_HOLDER = (
    "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid"
    " WHERE l.locktype = 'advisory' AND l.granted AND l.classid = %s::oid"
    " AND l.objid = (hashtext(%s)::bigint & 4294967295)::oid AND l.objsubid = 2"
)


def advisory_lease(
    conninfo: str, schema: str, where: str, what: str, wait: float = 0.0
) -> contextlib.AbstractContextManager[None]:
    """Hold the writer lease of `schema` on the server `conninfo` names."""
    holder = holder_text(what)

    def acquire() -> Callable[[], None] | None:
        conn = psycopg.connect(conninfo, autocommit=True, application_name=holder[:63])
        got = conn.execute(
            "SELECT pg_try_advisory_lock(%s, hashtext(%s))", (LEASE_CLASS, schema)
        ).fetchone()
        if not got or not got[0]:
            conn.close()
            return None

        def release() -> None:
            with contextlib.suppress(psycopg.Error):
                conn.close()  # the session's advisory locks go with it

        return release

    def busy(waited: float) -> Exception:
        with contextlib.suppress(psycopg.Error), psycopg.connect(conninfo, autocommit=True) as c:
            row = c.execute(_HOLDER, (LEASE_CLASS, schema)).fetchone()
            if row:
                return refusal(where, row[0], waited)
        return refusal(where, None, waited)

    return shared_lease(f"pg:{conninfo}:{schema}", acquire, busy, wait)
