"""Exact BM25 top-k of one segment over windows of chunk numbers, as plain Python that
`ragloom.lexical.kernels` compiles with numba (far too slow uncompiled; every name in
`COMPILED` is replaced by its compiled form first).

The segment's chunks are taken WINDOW at a time, in order. Each query term's cursor sits at its
first posting in the window; the window's bound is the sum, over the terms, of the best weight
of the blocks of postings the window's postings fall in (exact maxima of the very weights
summed). A window whose bound stays below the k-th best score so far is skipped unread; while
bounds keep failing to skip, they are checked on ever fewer windows (up to one in CHECKS), as
they only cost then. Otherwise every posting in it is added into a window-sized score buffer,
term by term in query order, from 0.0 (the additions `ragloom.lexical.topk._score_all` makes,
so the scores are equal to the last bit). The buffer is then counted for scores at or above the
score to enter (a branch-free pass the compiler vectorizes) and read chunk by chunk only when
some are: cheaper than reading it at every posting of the terms that can still bring a chunk
in. It stays in the first-level cache (4 KB), where the exhaustive kernel's segment-sized score
array does not, and its index and the postings' are unsigned (no negative-index wraparound).

Bounds are summed in another order than scores: a window is skipped only when its bound falls
`cursors.MARGIN` (relative) below the k-th score. The result is every eligible chunk scoring
at least the k-th best score (ties kept); no fast math, no reordering.
"""

from __future__ import annotations

import numpy as np

from ragloom.lexical import cursors

WINDOW = 512  # chunks per window (its score buffer: 4 KB)
CHECKS = 32  # at most this many windows go unchecked after bounds that kept failing
COMPILED = ("scan", "offer")


def windows(docs, lo, hi, waddr, bmax, boff, n, eligible, filtered, k, theta0):  # pragma: no cover
    """(chunk numbers, scores) that can make the top `k` of a segment of `n` chunks, as
    `ragloom.lexical.maxscore.maxscore` finds them from the same arguments (it never gives up
    here): every eligible chunk at or above the k-th best score and `theta0`, ties kept."""
    T = lo.shape[0]
    count = hi - lo
    _, prefix = cursors.bounds(bmax, boff, T)
    found = cursors.start(count, n, k, theta0, prefix, 0)
    scan(docs, lo, count, waddr, bmax, boff, n, eligible, filtered, found)
    heap, _, cand_docs, cand_scores, state = found[:5]
    return cursors.at_floor(cand_docs, cand_scores, state[1], heap, state[0], k)


def scan(docs, lo, count, waddr, bmax, boff, n, eligible, filtered, found):  # pragma: no cover
    """The windows in order: skipped on their bound, else added up and read (one function:
    numba keeps reference counts on arrays passed to a function, too dear per window)."""
    T = lo.shape[0]
    if T == 0:
        return
    limits = found[5]
    pos = np.zeros(T, np.int64)  # each term's cursor, relative to lo[q]
    edge = np.zeros(T, np.int64)  # ... its last posting before the window's end (-1: none)
    buf = np.zeros(WINDOW, np.float64)
    wait, gap = 0, 0  # windows left unchecked; how many after the next failed check
    for w0 in range(0, n, WINDOW):
        w1 = w0 + WINDOW
        wait -= 1
        if limits[0] > 0.0 and wait < 0:  # the bound: per term, the best of the blocks spanned
            bound = 0.0
            for q in range(T):
                p, n_q, base = pos[q], count[q], lo[q]
                edge[q] = -1
                if p >= n_q or docs[base + p] >= w1:
                    continue
                b = p >> cursors.SHIFT
                best = bmax[boff[q] + b]
                last = min((b + 1) << cursors.SHIFT, n_q) - 1
                while docs[base + last] < w1 and last < n_q - 1:
                    b += 1
                    best = max(best, bmax[boff[q] + b])
                    last = min(last + cursors.BLOCK_SIZE, n_q - 1)
                edge[q] = last
                bound += best
            if bound >= limits[0]:  # in vain: check less often while they keep failing
                gap = min(2 * gap + 1, CHECKS)
                wait = gap
            else:  # hopeless: each cursor past the window, by bisection
                gap = 0
                for q in range(T):
                    last, base = edge[q], lo[q]
                    if last < 0:
                        continue
                    if docs[base + last] < w1:  # (the term's last posting)
                        pos[q] = last + 1
                        continue
                    first = max(pos[q], (last >> cursors.SHIFT) << cursors.SHIFT)
                    while first < last:
                        mid = (first + last) >> 1
                        if docs[base + mid] < w1:
                            first = mid + 1
                        else:
                            last = mid
                    pos[q] = first
                continue
        u0, u1 = np.uint64(w0), np.uint64(w1)
        p, n_q, base, wa = pos[0], count[0], lo[0], waddr[0]
        while p < n_q:  # the first term is stored (0.0 + w is w: the same bits, no load)
            d = np.uint64(docs[np.uint64(base + p)])
            if d >= u1:
                break
            buf[d - u0] = cursors.weights_at(wa, p)
            p += 1
        pos[0] = p
        for q in range(1, T):  # exact: every posting, term by term in query order
            p, n_q, base, wa = pos[q], count[q], lo[q], waddr[q]
            while p < n_q:  # (unsigned indexes: no wraparound test per posting)
                d = np.uint64(docs[np.uint64(base + p)])
                if d >= u1:
                    break
                buf[d - u0] += cursors.weights_at(wa, p)
                p += 1
            pos[q] = p
        enter = limits[1]
        hits = 0
        for j in range(WINDOW):  # any chunk to read? (vectorized: no branch per chunk)
            hits += buf[j] >= enter
        if hits > 0:
            for j in range(WINDOW):
                s = buf[j]
                if s >= limits[1] and (not filtered or eligible[w0 + j]):
                    offer(found, w0 + j, s)
        buf[:] = 0.0


def offer(found, d, s):  # pragma: no cover
    """Chunk `d` scoring `s` (at least the score to enter) joins the candidates and the heap;
    the score to enter, the bound to reach and the non-essential terms follow the k-th best."""
    heap, k, cand_docs, cand_scores, state, limits, prefix, theta0 = found
    m = state[1]
    cand_docs[m] = d
    cand_scores[m] = s
    state[1] = m + 1
    state[0] = cursors.push(heap, state[0], k, s)
    if state[0] == k:
        limits[1] = max(theta0, heap[0])
        if heap[0] * (1.0 - cursors.MARGIN) > limits[0]:
            limits[0] = heap[0] * (1.0 - cursors.MARGIN)
            state[2] = cursors.essential_from(prefix, state[2], limits[0])
