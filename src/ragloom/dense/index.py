"""Exact dense search: one matrix-vector product over a cached float32 matrix.

Vectors are unit length, so the dot product is the cosine. Added vectors land in pending
blocks that are stacked into the matrix on the next search; removed rows are masked, and
the matrix is compacted when dead rows pile up.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ragloom.topn import best_first


class DenseIndex:
    """Unit vectors keyed by chunk row id, searched exhaustively."""

    def __init__(self, dimension: int) -> None:
        self.dimension = dimension
        self._rows = np.zeros(0, np.int64)
        self._matrix = np.zeros((0, dimension), np.float32)
        self._alive = np.zeros(0, bool)
        self._pending_rows: list[np.ndarray] = []
        self._pending_vectors: list[np.ndarray] = []
        self._slot_of_row: dict[int, int] = {}
        self._n_live = 0

    def __len__(self) -> int:
        return self._n_live

    def __contains__(self, row_id: int) -> bool:
        return row_id in self._slot_of_row

    def add(self, row_ids: Sequence[int], vectors: np.ndarray) -> None:
        """Add vectors (shape (n, dimension)) for chunk rows not yet present."""
        vectors = np.asarray(vectors, np.float32).reshape(len(row_ids), self.dimension)
        first = len(self._rows) + sum(len(r) for r in self._pending_rows)
        for offset, row in enumerate(row_ids):
            if row in self._slot_of_row:
                raise ValueError(f"chunk row {row} already has a vector")
            self._slot_of_row[int(row)] = first + offset
        self._pending_rows.append(np.asarray(row_ids, np.int64))
        self._pending_vectors.append(vectors)
        self._n_live += len(row_ids)

    def remove(self, row_ids: Sequence[int]) -> None:
        """Forget rows (unknown ids are ignored)."""
        self._flush()
        slots = [self._slot_of_row.pop(r) for r in row_ids if r in self._slot_of_row]
        if not slots:
            return
        self._alive[slots] = False
        self._n_live -= len(slots)
        dead = len(self._rows) - self._n_live
        if dead > 1024 and dead > self._n_live:
            self._compact()

    def _flush(self) -> None:
        if not self._pending_rows:
            return
        rows = np.concatenate([self._rows, *self._pending_rows])
        self._matrix = np.vstack([self._matrix, *self._pending_vectors])
        self._alive = np.concatenate([self._alive, np.ones(len(rows) - len(self._rows), bool)])
        self._rows = rows
        self._pending_rows, self._pending_vectors = [], []

    def _compact(self) -> None:
        live = np.flatnonzero(self._alive)
        self._rows = self._rows[live]
        self._matrix = np.ascontiguousarray(self._matrix[live])
        self._alive = np.ones(len(live), bool)
        self._slot_of_row = {int(r): i for i, r in enumerate(self._rows.tolist())}

    def vectors_for(self, row_ids: Sequence[int]) -> np.ndarray:
        """The stored vectors of the given rows (for MMR and explanations)."""
        self._flush()
        return self._matrix[[self._slot_of_row[r] for r in row_ids]]

    def search(
        self, query: np.ndarray, top_n: int, allowed_rows: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Top `top_n` rows by cosine with `query`, best first (ties: earlier-added first)."""
        self._flush()
        if top_n <= 0 or self._n_live == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        scores = self._matrix @ np.asarray(query, np.float32)
        eligible = self._alive
        if allowed_rows is not None:
            eligible = eligible & np.isin(self._rows, allowed_rows)
        candidates = np.flatnonzero(eligible)
        best = best_first(candidates, scores, top_n)
        return self._rows[best], scores[best]
