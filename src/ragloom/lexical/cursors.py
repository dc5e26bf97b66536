"""Pieces the pruning kernels share (`ragloom.lexical.maxscore`, `ragloom.lexical.windows`):
moving a term's cursor through its postings, the terms' bounds, the k best scores so far.

Plain Python that `ragloom.lexical.kernels` compiles with numba: every name in `COMPILED`
is replaced by its compiled form before the kernels that call it are compiled (numba calls
only compiled functions from compiled code), and `weights_at` by a numba intrinsic. Uncompiled
they are far too slow to serve.
"""

from __future__ import annotations

import numpy as np

BLOCK_SIZE = 128  # postings per block of the block maxima (a term's blocks start at its first)
SHIFT = 7  # log2(BLOCK_SIZE)
MARGIN = 1e-9  # relative: a bound must fall this far below the k-th score to drop anything
PROBE = 8  # postings stepped over one by one before skipping by blocks

COMPILED = ("seek", "bounds", "essential_from", "push", "start", "at_floor")


def weights_at(address, index):  # pragma: no cover (a numba intrinsic replaces it)
    """The float64 at `index` of the array whose data starts at `address` (each term's cached
    weights are read by address: a numba list of arrays costs more per access than scoring)."""
    raise NotImplementedError("compiled by ragloom.lexical.kernels")


def seek(docs, base, n_q, p, d):  # pragma: no cover (compiled)
    """The first position from `p` of a term's postings (docs[base:base+n_q]) whose chunk is
    at least `d` (n_q if none): a few steps one by one, then whole blocks, then a bisection."""
    steps = 0
    while p < n_q and docs[base + p] < d and steps < PROBE:
        p += 1
        steps += 1
    if p >= n_q or docs[base + p] >= d:
        return p
    last = min(((p >> SHIFT) + 1) << SHIFT, n_q) - 1
    while docs[base + last] < d and last < n_q - 1:
        last = min(last + BLOCK_SIZE, n_q - 1)
    if docs[base + last] < d:
        return n_q
    first = max(p, (last >> SHIFT) << SHIFT)
    while first < last:
        mid = (first + last) >> 1
        if docs[base + mid] < d:
            first = mid + 1
        else:
            last = mid
    return first


def bounds(bmax, boff, terms):  # pragma: no cover (compiled)
    """(order, prefix): the query terms weakest first by their best weight, and prefix[i] the
    best weights of the i weakest together (a bound on what those terms can add)."""
    upper = np.zeros(terms, np.float64)
    for q in range(terms):
        for j in range(boff[q], boff[q + 1]):
            if bmax[j] > upper[q]:
                upper[q] = bmax[j]
    order = np.argsort(upper, kind="mergesort")
    prefix = np.zeros(terms + 1, np.float64)
    for i in range(terms):
        prefix[i + 1] = prefix[i] + upper[order[i]]
    return order, prefix


def essential_from(prefix, ne, limit):  # pragma: no cover (compiled)
    """How many of the weakest terms are non-essential: together they stay below `limit`, so
    a chunk with none of the others cannot reach it."""
    while ne < prefix.shape[0] - 1 and prefix[ne + 1] < limit:
        ne += 1
    return ne


def push(heap, size, k, s):  # pragma: no cover (compiled)
    """Offer score `s` to the min-heap of the k best scores (`size` of them so far); returns
    the new size."""
    if size < k:
        heap[size] = s
        j = size
        while j > 0:
            parent = (j - 1) >> 1
            if heap[parent] <= heap[j]:
                break
            heap[parent], heap[j] = heap[j], heap[parent]
            j = parent
        return size + 1
    if s > heap[0]:
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
    return size


def start(count, most, k, theta0, prefix, share):  # pragma: no cover (compiled)
    """A kernel's findings so far: (heap, k, candidate chunks, their scores, state, limits,
    prefix, theta0). The heap is a min-heap of the k best scores; candidates (at most `most`,
    never more than one per chunk: the arrays never grow) are the chunks that reached the score
    to enter when offered; state = [heap size, candidates, non-essential terms, `share`,
    look-ups made]; limits = [the bound a chunk or window must reach, the score to enter]."""
    heap = np.empty(k, np.float64)
    cap = 0
    for q in range(count.shape[0]):
        cap += count[q]
    cap = min(cap, most)
    state = np.array([0, 0, 0, share, 0], np.int64)
    limits = np.array([theta0 * (1.0 - MARGIN), max(theta0, 5e-324)])
    state[2] = essential_from(prefix, 0, limits[0])
    candidates = (np.empty(cap, np.int64), np.empty(cap, np.float64))
    return (heap, k, candidates[0], candidates[1], state, limits, prefix, theta0)


def at_floor(cand_docs, cand_scores, m, heap, size, k):  # pragma: no cover (compiled)
    """The first `m` candidates scoring at least the k-th best score (all if fewer than k)."""
    floor = heap[0] if size == k else 0.0
    kept = 0
    for j in range(m):
        if cand_scores[j] >= floor:
            cand_docs[kept] = cand_docs[j]
            cand_scores[kept] = cand_scores[j]
            kept += 1
    return cand_docs[:kept], cand_scores[:kept]
