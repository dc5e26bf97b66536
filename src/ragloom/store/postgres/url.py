"""A PostgreSQL store's location: a libpq URL (one host or several), ragloom's own options
taken out of it, and the connection strings for writing and for searching.

One URL may name a primary and its replicas (`postgresql://u@primary,replica1,replica2/db`):
writes connect with `target_session_attrs=read-write`, searches with `prefer-standby` and
`load_balance_hosts=random`; a parameter given in the URL wins over these defaults.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ragloom.errors import InputError

# ragloom's options, removed before the URL reaches libpq (which rejects unknown keys)
OPTIONS = {"schema": "ragloom", "hnsw_threshold": "20000", "replica_wait": "0.02"}
_IDENT = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


@dataclass(frozen=True)
class Location:
    """Where a PostgreSQL store lives and how to connect for each kind of work."""

    write: str  # conninfo for writes (the primary)
    read: str  # conninfo for searches (a replica when there is one)
    shown: str  # the URL without its password, for messages
    schema: str
    hnsw_threshold: int
    replica_wait: float  # seconds a search waits for a replica to replay this process's writes
    hosts: int  # how many hosts the URL names


def _split(url: str) -> tuple[str, dict[str, str]]:
    base, _, query = url.partition("?")
    params: dict[str, str] = {}
    for pair in filter(None, query.split("&")):
        key, _, value = pair.partition("=")
        params[key] = value
    return base, params


def _join(base: str, params: dict[str, str]) -> str:
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return f"{base}?{query}" if query else base


def hide_password(url: str) -> str:
    """The URL without a password (`postgresql://user:secret@host` -> `postgresql://user@host`)."""
    base, params = _split(url)
    base = re.sub(r"^([a-z]+://[^:@/]*):[^@/]*@", r"\1@", base)
    params = {k: ("***" if k == "password" else v) for k, v in params.items()}
    return _join(base, params)


def parse_location(url: str) -> Location:
    """Split ragloom's options (`schema`, `hnsw_threshold`, `replica_wait`) from a libpq URL."""
    base, params = _split(url)
    options = {key: params.pop(key, default) for key, default in OPTIONS.items()}
    schema = options["schema"]
    if not _IDENT.match(schema):
        raise InputError(
            f"schema must be a lower-case SQL identifier, got {schema!r}", "e.g. ?schema=ragloom"
        )
    try:
        threshold = int(options["hnsw_threshold"])
        wait = float(options["replica_wait"])
    except ValueError as exc:
        raise InputError(f"bad ragloom option in the database URL: {exc}") from None
    hosts = base.split("://", 1)[1].split("/", 1)[0].rsplit("@", 1)[-1]
    count = len([h for h in hosts.split(",") if h]) or 1
    write = {"target_session_attrs": "read-write", **params} if count > 1 else dict(params)
    read = dict(params)
    if count > 1:
        read = {"target_session_attrs": "prefer-standby", "load_balance_hosts": "random", **read}
        read["target_session_attrs"] = params.get("target_session_attrs", "prefer-standby")
    return Location(
        write=_join(base, write),
        read=_join(base, read),
        shown=hide_password(_join(base, params)),
        schema=schema,
        hnsw_threshold=threshold,
        replica_wait=wait,
        hosts=count,
    )
