"""Long `IN (...)` lists in slices under SQLite's parameter limit, for reads and writes."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

SLICE = 500  # rows per IN (...) list, under SQLite's parameter limit


def sliced(items: Sequence[Any], size: int = SLICE) -> Iterable[Sequence[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def rows_in(conn: sqlite3.Connection, sql: str, first: Sequence[Any], keys: Sequence[Any]):
    """Run `sql` (parameters `first`, then `{marks}` for a slice of keys) over all keys."""
    out: list[tuple] = []
    for part in sliced(list(keys)):
        marks = ",".join("?" * len(part))
        out.extend(conn.execute(sql.format(marks=marks), (*first, *part)).fetchall())
    return out
