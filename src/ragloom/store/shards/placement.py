"""Where a document lives in a shard set, and how a chunk's row id says which shard holds it.

Pure functions. A document is placed by a stable hash of its id (BLAKE2b, 8 bytes) through
jump consistent hashing (Lamping and Veach, 2014): growing a set from N to N+1 shards moves
only the documents whose home becomes the new shard (about 1/(N+1) of them), none between
old shards. A chunk's row id across the set is its row id on its shard times `MAX_SHARDS`
plus the shard's number, so ids never collide and each one finds its shard without a lookup.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from hashlib import blake2b

import numpy as np

MAX_SHARDS = 64
_MASK = (1 << 64) - 1


def key_of(doc_id: str) -> int:
    """A document id's 64-bit placement key (the same in every process and version)."""
    data = doc_id.encode("utf-8", "surrogatepass")
    return int.from_bytes(blake2b(data, digest_size=8).digest(), "little")


def jump(key: int, buckets: int) -> int:
    """Jump consistent hash: the bucket in [0, buckets) of a 64-bit key."""
    if buckets < 1:
        raise ValueError("a shard set needs at least one shard")
    b, j = -1, 0
    while j < buckets:
        b = j
        key = (key * 2862933555777941757 + 1) & _MASK
        j = int((b + 1) * ((1 << 31) / ((key >> 33) + 1)))
    return b


def shard_of(doc_id: str, shards: int) -> int:
    """The shard (0-based) that holds `doc_id` in a set of `shards`."""
    return jump(key_of(doc_id), shards)


def by_shard(doc_ids: Iterable[str], shards: int) -> dict[int, list[str]]:
    """Document ids grouped by their shard (in the order given)."""
    out: dict[int, list[str]] = {}
    for doc_id in doc_ids:
        out.setdefault(shard_of(doc_id, shards), []).append(doc_id)
    return out


def global_row(local: int, shard: int) -> int:
    """A chunk's row id across the set, from its row id on `shard`."""
    return int(local) * MAX_SHARDS + shard


def global_rows(local: np.ndarray, shard: int) -> np.ndarray:
    return np.asarray(local, np.int64) * MAX_SHARDS + shard


def split_row(row: int) -> tuple[int, int]:
    """(shard, row id on that shard) of a row id across the set."""
    return int(row) % MAX_SHARDS, int(row) // MAX_SHARDS


def rows_by_shard(rows: Sequence[int]) -> dict[int, list[int]]:
    """Local row ids grouped by shard (each group in the order given)."""
    out: dict[int, list[int]] = {}
    for row in rows:
        shard, local = split_row(row)
        out.setdefault(shard, []).append(local)
    return out


def merge_top(
    parts: Sequence[tuple[np.ndarray, np.ndarray]], k: int
) -> tuple[np.ndarray, np.ndarray]:
    """The k best of several (global row ids, scores) lists: score descending, then row id
    ascending (what each shard's own order is)."""
    parts = [p for p in parts if len(p[0])]
    if not parts:
        return np.zeros(0, np.int64), np.zeros(0, np.float64)
    rows = np.concatenate([p[0] for p in parts])
    scores = np.concatenate([p[1] for p in parts])
    order = np.lexsort((rows, -scores))[:k]
    return rows[order], scores[order]
