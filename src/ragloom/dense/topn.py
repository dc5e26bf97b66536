"""Top-n selection for the dense leg: the n best of a pool of scores, best first, ties to the
lower index; compiled when numba is there (a 1 % filter's 1,000 scores at 100k: about 6 us
against numpy's 34 within a search)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ragloom.compiled import Compiled


def best_first(candidates: np.ndarray, scores: np.ndarray, n: int) -> np.ndarray:
    """The `n` best of `candidates` (indexes into `scores`), best first; ties: lower index first.

    A partial sort keeps this linear in the candidates; only the survivors are fully sorted.
    """
    if len(candidates) > n:
        part = np.argpartition(-scores[candidates], n - 1)[:n]
        threshold = scores[candidates[part]].min()
        candidates = candidates[scores[candidates] >= threshold]
    order = np.lexsort((candidates, -scores[candidates]))[:n]
    return candidates[order]


def best_of(scores: np.ndarray, n: int, compiled: bool = True) -> np.ndarray:
    """`best_first(np.arange(len(scores)), scores, n)`: the indexes of the n best scores, by
    the compiled heap unless `compiled` is False (or it cannot load)."""
    if n <= 0:
        return np.zeros(0, np.int64)
    kernel = _kernel.get() if compiled else None
    if kernel is not None:
        scores = np.ascontiguousarray(scores)
        out = np.empty(min(n, len(scores)), np.int64)
        found = kernel(scores, n, out)
        if found >= 0:
            return out[:found]
    return best_first(np.arange(len(scores)), scores, n)  # (or a NaN among the scores)


def compiled() -> bool:
    """True when `best_of` runs compiled; the first call loads (or compiles) it."""
    return _kernel.get() is not None


def _best_of(scores, n, out):  # pragma: no cover - compiled by numba
    """The indexes of the n best scores into `out`, best first, ties to the lower index;
    their count, or -1 at a NaN (numpy's order for it is the caller's). A heap holds the
    kept ones, the worst on top: most scores are turned away by one comparison with it, and
    no order of the scores costs more than log n per score."""
    keep = min(n, scores.shape[0])
    size = 0
    for i in range(scores.shape[0]):
        score = scores[i]
        if score != score:
            return -1
        if size < keep:  # sift the new one up
            place = size
            size += 1
            while place > 0:
                parent = (place - 1) // 2
                if not _worse(scores, i, out[parent]):
                    break
                out[place] = out[parent]
                place = parent
            out[place] = i
        elif score > scores[out[0]]:  # an equal score loses: the kept one has the lower index
            _replace_top(scores, out, size, i)
    for end in range(size - 1, 0, -1):  # take the worst off the top, into the last place
        worst = out[0]
        _replace_top(scores, out, end, out[end])
        out[end] = worst
    return size


def _worse(scores, a, b):  # pragma: no cover - compiled by numba
    """Whether index a ranks below index b: a lower score, or an equal one at a higher index."""
    return scores[a] < scores[b] or (scores[a] == scores[b] and a > b)


def _replace_top(scores, heap, size, item):  # pragma: no cover - compiled by numba
    """Put `item` in place of the heap's top and sift it down among the first `size`."""
    place = 0
    while True:
        child = 2 * place + 1
        if child >= size:
            break
        if child + 1 < size and _worse(scores, heap[child + 1], heap[child]):
            child += 1
        if not _worse(scores, heap[child], item):
            break
        heap[place] = heap[child]
        place = child
    heap[place] = item


COMPILED = ("_worse", "_replace_top")  # the pieces `_best_of` calls, compiled first


def _build(njit: Callable) -> Callable:
    module = globals()
    for name in COMPILED:
        function = module[name]
        module[name] = njit(cache=True, nogil=True)(getattr(function, "py_func", function))
    kernel = njit(cache=True, nogil=True)(_best_of)
    for kind in (np.float32, np.float64):
        kernel(np.zeros(2, kind), 1, np.zeros(1, np.int64))  # compile or load it now
    return kernel


_kernel = Compiled(_build)
