"""Timing two ways of answering the same queries in one process, query by query: on a shared
machine, load that comes and goes then falls on both alike."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np


def alternate(
    first: Callable[[int], object], second: Callable[[int], object], count: int
) -> tuple[np.ndarray, np.ndarray]:
    """Milliseconds of `first(i)` and `second(i)` for each i < count, run one after the
    other, the order swapped every other query."""
    times: tuple[list[float], list[float]] = ([], [])
    pair = ((0, first), (1, second))
    for i in range(count):
        for slot, run in pair if i % 2 else pair[::-1]:
            started = time.perf_counter()
            run(i)
            times[slot].append((time.perf_counter() - started) * 1000)
    return np.array(times[0]), np.array(times[1])


def spread(ms: np.ndarray) -> str:
    """ "p50 / p95" of a run's milliseconds."""
    return f"{np.median(ms):.2f} / {np.percentile(ms, 95):.2f}"
