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


def alternate_blocks(
    first: Callable[[int], object], second: Callable[[int], object], count: int, block: int
) -> tuple[np.ndarray, np.ndarray]:
    """`alternate` in blocks: `block` queries of one, then the same `block` of the other, the
    order swapped every other block. Each keeps its caches through a block (query by query,
    two engines evict each other's, which slows both and tilts the ratio to the one whose
    path is less cache-bound), while load that comes and goes still falls on both."""
    times: tuple[list[float], list[float]] = ([], [])
    pair = ((0, first), (1, second))
    for b, lo in enumerate(range(0, count, block)):
        for slot, run in pair if b % 2 else pair[::-1]:
            for i in range(lo, min(count, lo + block)):
                started = time.perf_counter()
                run(i)
                times[slot].append((time.perf_counter() - started) * 1000)
    return np.array(times[0]), np.array(times[1])


def spread(ms: np.ndarray) -> str:
    """ "p50 / p95" of a run's milliseconds."""
    return f"{np.median(ms):.2f} / {np.percentile(ms, 95):.2f}"
