"""The embedder contract shared by the local model and the HTTP services."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

import numpy as np


def normalize_rows(matrix: np.ndarray) -> np.ndarray:
    """Scale each row to unit length (zero rows stay zero) so dot product = cosine."""
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1.0, norms)


class Embedder(ABC):
    """Turns texts into vectors. `name` identifies the model the vectors belong to."""

    name: str
    dimension: int
    batch_size: int = 32
    dense_floor: float | None = None  # its dense-only floor, if known (embedding.floors)

    @abstractmethod
    def _embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors for one batch (at most `batch_size` texts), any scale."""

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors for `texts`, shape (len(texts), dimension), in `batch_size` batches."""
        if not texts:
            return np.zeros((0, self.dimension), np.float32)
        parts = [
            self._embed_batch(texts[i : i + self.batch_size])
            for i in range(0, len(texts), self.batch_size)
        ]
        return normalize_rows(np.vstack(parts))

    def embed_query(self, text: str) -> np.ndarray:
        """One query's unit vector."""
        return self.embed([text])[0]

    def config(self) -> dict[str, Any]:
        """What to store with a collection to rebuild this embedder (never secrets)."""
        return {"provider": "custom", "model": self.name, "dimension": self.dimension}
