"""The committed vocabulary in memory: term -> id, and analyzer term numbers -> id.

Term ids never change once committed, so both caches only grow (within bounds); a write
reads them and records what it inserted, which the store adds after COMMIT.
"""

from __future__ import annotations

import sqlite3
import weakref

import numpy as np

from ragloom.store.sql import SQLITE
from ragloom.text.numbering import TermNumbers


class TermCache:
    """term -> id for committed vocabulary (ids never change once committed).

    While it holds every committed term (from an empty table on, through this process's
    own writes), a term it lacks is known to be new and a write skips looking it up. Query
    words the vocabulary lacks are remembered per version (`lookup_at`): a search repeating
    a word no chunk has reads the terms table once, not every time."""

    LIMIT = 3_000_000
    ABSENT_LIMIT = 100_000

    def __init__(self) -> None:
        self._ids: dict[str, int] = {}
        self._complete_upto: int | None = None  # every committed id <= this is cached
        # (generation, terms the vocabulary lacked at it): replaced whole, never relabelled
        self._absent: tuple[int, set[str]] = (-1, set())

    def holds_all(self, committed_top: int) -> bool:
        """Whether every committed term is cached, `committed_top` being the largest id."""
        return committed_top == 0 or self._complete_upto == committed_top

    def advance(self, committed_top: int, new_top: int) -> None:
        """After a commit that took the ids above `committed_top` up to `new_top`."""
        if self.holds_all(committed_top):
            self._complete_upto = new_top
        else:
            self._complete_upto = None

    def known(self, terms: set[str]) -> dict[str, int]:
        ids = self._ids
        return {t: ids[t] for t in terms if t in ids}

    def lookup_at(
        self, conn: sqlite3.Connection, terms: set[str], generation: int
    ) -> dict[str, int]:
        """term -> id for the terms a reader at `generation` finds in the vocabulary. A term
        it lacked at a version is not read again at that version (only writes add terms,
        and each moves the generation); a lack holds for every older version, not newer."""
        found = self.known(terms)
        if len(found) == len(terms):
            return found
        seen, absent = self._absent
        if generation > seen:
            seen, absent = generation, set()
            self._absent = (seen, absent)
        missing = [t for t in terms if t not in found and t not in absent]
        if missing:
            rows = dict(
                SQLITE.rows_in(conn, "SELECT term, id FROM terms WHERE term {keys}", [], missing)
            )
            found.update(rows)
            self.add(rows)
            if generation == seen and len(absent) < self.ABSENT_LIMIT:
                absent.update(t for t in missing if t not in rows)
        return found

    def add(self, pairs: dict[str, int]) -> None:
        if len(self._ids) + len(pairs) > self.LIMIT:
            self._ids = {}
            self._complete_upto = None
        self._ids.update(pairs)


class NumberedTerms:
    """Committed term ids by an analyzer's term numbers: numbers -> ids in one array lookup
    (-1 where this process has not written the term yet). Written only under the lock."""

    def __init__(self) -> None:
        self._tables: weakref.WeakKeyDictionary[TermNumbers, np.ndarray] = (
            weakref.WeakKeyDictionary()
        )

    def ids(self, names: TermNumbers, numbers: np.ndarray) -> np.ndarray:
        """A new array: the id of each number, or -1."""
        table = self._tables.get(names)
        if table is None or not len(numbers):
            return np.full(len(numbers), -1, np.int64)
        inside = numbers < len(table)
        if inside.all():
            return table[numbers]
        out = np.full(len(numbers), -1, np.int64)
        out[inside] = table[numbers[inside]]
        return out

    def learn(self, names: TermNumbers, numbers: np.ndarray, ids: np.ndarray) -> None:
        table = self._tables.get(names)
        size = max(len(names), int(numbers.max()) + 1 if len(numbers) else 0)
        if table is None or len(table) < size:
            grown = np.full(max(size, 2 * len(table) if table is not None else 0), -1, np.int64)
            if table is not None:
                grown[: len(table)] = table
            table = self._tables[names] = grown
        table[numbers] = ids
