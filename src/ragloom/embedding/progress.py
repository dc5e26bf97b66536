"""Embedding progress: how many passages were embedded, and how long it took.

`Embedder.embed` reports each batch to every meter opened with `measure_embedding` in the
calling thread (or task), so an indexing call can say how long its embedding took and a
progress bar can show passages per second, without threading callbacks through the index.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass
class EmbeddingMeter:
    """Passages handed to embedders (`queued`), embedded (`passages`) and the seconds spent
    embedding them, summed over calls and batches."""

    passages: int = 0
    seconds: float = 0.0
    queued: int = 0
    on_update: Callable[[EmbeddingMeter], None] | None = None

    @property
    def rate(self) -> float:
        """Passages per second so far (0 before the first batch)."""
        return self.passages / self.seconds if self.seconds > 0 else 0.0


_meters: ContextVar[tuple[EmbeddingMeter, ...]] = ContextVar("ragloom_embedding_meters", default=())


@contextmanager
def measure_embedding(
    on_update: Callable[[EmbeddingMeter], None] | None = None,
) -> Iterator[EmbeddingMeter]:
    """Count the embedding done inside the block; `on_update(meter)` runs when texts are
    queued and after each batch."""
    meter = EmbeddingMeter(on_update=on_update)
    token = _meters.set((*_meters.get(), meter))
    try:
        yield meter
    finally:
        _meters.reset(token)


def record_queued(passages: int) -> None:
    """Called by embedders when a call with `passages` texts starts."""
    for meter in _meters.get():
        meter.queued += passages
        if meter.on_update is not None:
            meter.on_update(meter)


def record_batch(passages: int, seconds: float) -> None:
    """Called by embedders after each batch they embedded."""
    for meter in _meters.get():
        meter.passages += passages
        meter.seconds += seconds
        if meter.on_update is not None:
            meter.on_update(meter)
