"""Compiled BM25 accumulation and top-k selection (numba), for when scoring every match in one
pass beats pruning in numpy: Python's per-step overhead, not the arithmetic, is what costs.

`score_top` adds each query term's cached BM25 weights into one score per chunk, term by term
in query order (the very additions `ragloom.lexical.topk._score_all` makes with numpy, so the
scores are equal to the last bit), and returns every chunk that can be in the top k: those
scoring at least the k-th best eligible score, ties kept. Nothing is reordered and no fast
math is allowed, so the results do not depend on the CPU (AVX2 or AVX-512 alike). Without
numba installed `available()` is False and the numpy paths run as before.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence

import numpy as np

_compiled: dict | None = None
_lock = threading.Lock()
_local = threading.local()


def available() -> bool:
    """True when the compiled kernels can run (numba installed, not switched off with
    RAGLOOM_KERNELS=0). The first call imports numba and loads (or compiles) the kernels,
    about 0.3 s, paid at `Index.warm()` or by the first lexical search, never at import."""
    global _compiled
    if _compiled is None:
        with _lock:
            if _compiled is None:
                _compiled = _load()
    return bool(_compiled)


def _load() -> dict:
    if os.environ.get("RAGLOOM_KERNELS", "1") == "0":
        return {}
    try:
        from numba import njit
    except ImportError:  # the numpy paths serve
        return {}
    compiled = {
        name: njit(cache=True, nogil=True)(function)
        for name, function in (("accumulate", _accumulate), ("select", _select))
    }
    scores, touched = np.zeros(4), np.zeros(4, np.int64)  # compile or load from the cache now
    count = compiled["accumulate"](scores, touched, 0, np.arange(2, dtype=np.uint32), np.ones(2))
    compiled["select"](scores, touched, count, np.zeros(1, np.bool_), False, 1)
    return compiled


# The kernels as plain Python: `_load` compiles them.


def _accumulate(scores, touched, count, docs, weights):  # pragma: no cover (compiled)
    for j in range(docs.shape[0]):
        d = docs[j]
        if scores[d] == 0.0:
            touched[count] = d
            count += 1
        scores[d] += weights[j]
    return count


def _select(scores, touched, count, eligible, filtered, k):  # pragma: no cover
    """Chunks scoring at least the k-th best eligible score (ties kept); resets
    `scores` to zero for the next query."""
    heap = np.empty(k, np.float64)  # a min-heap of the k best scores so far
    size = 0
    for i in range(count):
        d = touched[i]
        s = scores[d]
        if s <= 0.0 or (filtered and not eligible[d]):
            continue
        if size < k:
            heap[size] = s
            j = size
            size += 1
            while j > 0:
                parent = (j - 1) // 2
                if heap[parent] <= heap[j]:
                    break
                heap[parent], heap[j] = heap[j], heap[parent]
                j = parent
        elif s > heap[0]:
            heap[0] = s
            j = 0
            while True:
                left = 2 * j + 1
                if left >= size:
                    break
                child = left
                if left + 1 < size and heap[left + 1] < heap[left]:
                    child = left + 1
                if heap[j] <= heap[child]:
                    break
                heap[j], heap[child] = heap[child], heap[j]
                j = child
    floor = heap[0] if size == k else 0.0
    out_docs = np.empty(count, np.int64)
    out_scores = np.empty(count, np.float64)
    m = 0
    for i in range(count):
        d = touched[i]
        s = scores[d]
        scores[d] = 0.0
        if s <= 0.0 or s < floor or (filtered and not eligible[d]):
            continue
        out_docs[m] = d
        out_scores[m] = s
        m += 1
    return out_docs[:m], out_scores[:m]


def _buffers(n: int) -> tuple[np.ndarray, np.ndarray]:
    """This thread's zeroed score array and touched list, at least `n` long (reused: the
    kernel zeroes what it touched)."""
    held = getattr(_local, "buffers", None)
    if held is None or len(held[0]) < n:
        held = (np.zeros(n, np.float64), np.empty(n, np.int64))
        _local.buffers = held
    return held


def score_top(
    n: int,
    postings: Sequence[tuple[np.ndarray, np.ndarray]],
    eligible: np.ndarray | None,
    k: int,
) -> tuple[np.ndarray, np.ndarray]:
    """(chunk numbers, scores) that can make the top `k` of one segment of `n` chunks, from
    each query term's (docs, weights) in query order; `eligible` masks the chunks allowed."""
    accumulate, select = _compiled["accumulate"], _compiled["select"]  # type: ignore[index]
    scores, touched = _buffers(n)
    count = 0
    for docs, weights in postings:
        if len(docs):
            count = accumulate(scores, touched, count, docs, weights)
    mask = eligible if eligible is not None else np.zeros(1, np.bool_)
    return select(scores, touched, count, mask, eligible is not None, max(k, 1))
