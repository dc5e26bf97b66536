"""A shard set's URL: `postgresql+shards://` followed by the shard URLs' bodies, joined by `;`.

    postgresql+shards://u@10.0.0.1/db;u@10.0.0.2,10.0.0.3/db?schema=docs;u@10.0.0.4/db

names three shards; each body is what follows `postgresql://` in that shard's own URL, so a
shard may list its replicas (today's multi-host rules) and carry its own options. The order is
the shards' numbering: documents are placed by it, and a set grows by adding at the end.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ragloom.errors import InputError
from ragloom.store.postgres.url import hide_password
from ragloom.store.shards.placement import MAX_SHARDS

SCHEMES = ("postgresql+shards", "postgres+shards")


@dataclass(frozen=True)
class ShardSet:
    """The shards' own URLs, in order, and the set's URL without passwords."""

    shards: tuple[str, ...]
    shown: str

    def label(self, shard: int) -> str:
        """How messages name a shard: its number and its URL without password."""
        return f"shard {shard} ({hide_password(self.shards[shard])})"


def parse_shard_set(url: str) -> ShardSet:
    """The shards of a `postgresql+shards://` URL."""
    scheme, sep, body = url.partition("://")
    if not sep or scheme.lower() not in SCHEMES:
        raise InputError(f"not a shard set URL: {hide_password(url)!r}", "postgresql+shards://...")
    bodies = [b.strip() for b in body.split(";")]
    if not all(bodies):
        raise InputError(
            "a shard set URL names its shards separated by ';', none of them empty",
            "postgresql+shards://u@host1/db;u@host2/db",
        )
    if len(bodies) > MAX_SHARDS:
        raise InputError(f"a shard set holds at most {MAX_SHARDS} shards, got {len(bodies)}")
    shards = tuple(f"postgresql://{b}" for b in bodies)
    return ShardSet(shards, shard_set_url(hide_password(s) for s in shards))


def shard_set_url(shards: Iterable[str]) -> str:
    """The URL naming these shard URLs (each `postgresql://...`) as one set."""
    bodies = [str(s).split("://", 1)[1] for s in shards]
    return "postgresql+shards://" + ";".join(bodies)
