"""The embedder contract shared by the local model and the HTTP services."""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

import numpy as np

from ragloom.embedding.progress import record_batch, record_queued
from ragloom.errors import EmbeddingError
from ragloom.observe import embedding_failed


def normalize_rows(matrix: np.ndarray) -> np.ndarray:
    """Scale each row to unit length (zero rows stay zero) so dot product = cosine."""
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1.0, norms)


class Embedder(ABC):
    """Turns texts into vectors. `name` identifies the model the vectors belong to.

    `dimension` is None while unknown (an HTTP service's model, before it has answered and
    when no collection has stated it); it is never found out by calling the service.
    """

    name: str
    dimension: int | None
    batch_size: int = 32
    dense_floor: float | None = None  # its dense-only floor, if known (embedding.floors)
    # True when embedding mostly waits on another machine (a service), False when it computes
    # here, on every core it can get (a local model): only the first is worth overlapping
    remote: bool = False

    @abstractmethod
    def _embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors for one batch (at most `batch_size` texts), any scale."""

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors for `texts`, shape (len(texts), dimension), in `batch_size` batches."""
        if not texts:
            return np.zeros((0, self.dimension or 0), np.float32)
        parts = []
        record_queued(len(texts))
        try:
            for i in range(0, len(texts), self.batch_size):
                started = time.perf_counter()
                parts.append(self._embed_batch(texts[i : i + self.batch_size]))
                record_batch(len(parts[-1]), time.perf_counter() - started)
        except EmbeddingError as exc:
            embedding_failed(exc)  # monitoring (ragloom.observe): /metrics counts these
            raise
        return normalize_rows(np.vstack(parts))

    def embed_query(self, text: str) -> np.ndarray:
        """One query's unit vector (services use their shorter interactive timeout)."""
        return self.embed([text])[0]

    def ready(self) -> bool:
        """Whether embedding can start at once (False while a local model still loads)."""
        return True

    def adopt_dimension(self, dimension: int | None) -> None:
        """Learn the dimension a collection states for this model; only embedders whose
        dimension is unknown until they answer (HTTP services) use it."""
        if self.dimension is None and dimension is not None:
            self.dimension = int(dimension)

    def config(self) -> dict[str, Any]:
        """What to store with a collection to rebuild this embedder (never secrets)."""
        return {"provider": "custom", "model": self.name, "dimension": self.dimension}
