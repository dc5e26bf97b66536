"""Exact BM25 top-k of one segment by block-max MaxScore, as plain Python that
`ragloom.lexical.kernels` compiles with numba (far too slow uncompiled; every name in
`COMPILED` is replaced by its compiled form first).

The query's terms are walked together in chunk order, one cursor each. A term whose best
weight, added to the bests of every weaker term, cannot lift a chunk to the k-th best score so
far is *non-essential*: chunks containing only such terms are never looked at. A chunk found in
an essential term is looked up in the non-essential ones from the strongest down, and dropped
as soon as its known weights plus the bests still open fall below the k-th score (a term in
more than half the chunks is looked up by chunk number in its weights spread over the segment:
one read where seeking its postings takes several). With a single
essential term, whole blocks of its postings are skipped unread when their best weight plus
the best the other terms reach over the same chunks (their blocks overlapping it) cannot help,
and a posting's chunk number is read only when its weight can.
Bounds are exact maxima of the very weights that are summed, compared with a relative margin
(`cursors.MARGIN`), so summing them in another order cannot drop a chunk that belongs.

A chunk that survives is scored as `ragloom.lexical.topk._score_all` scores it: its terms'
weights added from 0.0 in query order (repeats counted again), so scores are equal to the last
bit. The result is every chunk scoring at least the k-th best score (ties kept), as the
exhaustive kernel returns; no fast math, no reordering.
"""

from __future__ import annotations

import numpy as np

from ragloom.lexical import cursors

COMPILED = ("walk", "block_rest", "next_any", "offer", "hopeless", "passed")
ALLOWANCE = 256  # look-ups always allowed (the k-th score is low while the top k fills)


def maxscore(
    docs, lo, hi, waddr, wmin, dense, bmax, boff, eligible, filtered, k, theta0, share
):  # pragma: no cover
    """(chunk numbers, scores, True): every eligible chunk scoring at least the k-th best
    score of this segment and at least `theta0` (a k-th score already reached elsewhere; 0 for
    none), ties kept. Gives up ((), (), False) once, past the first ALLOWANCE, more chunks
    than 1 in `share` postings passed needed a look beyond their essential terms (~25 ns each,
    against ~1 ns a posting scored window by window): the bounds are not selective for this
    query, and scoring every match window by window (`ragloom.lexical.windows`) is cheaper.

    docs: the segment's posting chunk numbers (all terms); query term q (query order, repeats
    kept) owns docs[lo[q]:hi[q]] and the float64 weights at address waddr[q] (one per posting);
    bmax[boff[q]:boff[q+1]] are the maxima of those weights over their blocks of postings,
    wmin[q] their minimum. dense = (daddr, dfrac): daddr[q], when not 0, is the address of term
    q's weights by chunk number (float64, one per chunk of the segment, 0.0 where absent), read
    instead of seeking its postings, and dfrac[q] its postings per chunk.
    """
    T = lo.shape[0]
    count = hi - lo
    order, prefix = cursors.bounds(bmax, boff, T)
    if hopeless(order, prefix, wmin, count, theta0, share):
        return np.empty(0, np.int64), np.empty(0, np.float64), False
    found = cursors.start(count, docs.shape[0], k, theta0, prefix, share)
    heap, _, cand_docs, cand_scores, state = found[:5]
    if not walk(docs, lo, count, (waddr, dense), bmax, boff, eligible, filtered, order, found):
        return cand_docs[:0], cand_scores[:0], False
    docs_found, scores = cursors.at_floor(cand_docs, cand_scores, state[1], heap, state[0], k)
    return docs_found, scores, True


def hopeless(order, prefix, wmin, count, theta0, share):  # pragma: no cover
    """True when the walk would give up for certain (as far as the terms' bounds tell) after
    its ALLOWANCE of look-ups: with the k-th score carried in, one term is essential and even
    its smallest weight plus the other terms' bests reaches that score, so every one of its
    postings needs a look-up (the 1M common query: ~24 us a segment spent to learn it)."""
    T = order.shape[0]
    limit = theta0 * (1.0 - cursors.MARGIN)
    if limit <= 0.0 or share <= 1 or T < 2:
        return False
    if cursors.essential_from(prefix, 0, limit) != T - 1:
        return False
    q = order[T - 1]
    return count[q] > 2 * ALLOWANCE and wmin[q] + prefix[T - 1] >= limit


def walk(docs, lo, count, read, bmax, boff, eligible, filtered, order, found):  # pragma: no cover
    """The chunks in order, as the essential terms meet them; False if it gave up
    (one function: numba keeps reference counts on arrays passed to a call, too dear here)."""
    waddr, (daddr, dfrac) = read
    T = lo.shape[0]
    state, limits, prefix = found[4], found[5], found[6]
    pos = np.zeros(T, np.int64)  # each term's cursor, relative to lo[q]
    shallow = np.zeros(T, np.int64)  # each term's block at or after the essential block's
    while state[2] < T:
        ne = state[2]
        if ne == T - 1:  # one essential term: walk it alone, skipping hopeless blocks
            q = order[ne]
            base, n_q, wa, bo = lo[q], count[q], waddr[q], boff[q]
            p, d, acc, held, rest = pos[q], np.int64(-1), -1.0, -1, 0.0
            while p < n_q:
                b = p >> cursors.SHIFT
                if b != held:  # a new block: what the other terms can add to its chunks
                    held = b
                    rest = block_rest(docs, lo, count, bmax, boff, order, ne, shallow, q, b)
                if bmax[bo + b] + rest < limits[0]:
                    p = (b + 1) << cursors.SHIFT
                    continue
                w = cursors.weights_at(wa, p)  # (the chunk number is read only if it can help)
                if w + rest >= limits[0]:
                    x = np.int64(docs[base + p])
                    if not filtered or eligible[x]:
                        d, acc = x, w
                        break
                p += 1
            pos[q] = min(p, n_q)
        else:
            d, acc = next_any(docs, lo, count, waddr, order, ne, pos, eligible, filtered, found)
        if d < 0:
            break
        i = ne - 1 if acc >= 0.0 else -1
        if acc >= 0.0:  # a look-up: more than 1 in `share` postings passed gives up
            state[4] += 1
            if state[4] > ALLOWANCE and state[4] - ALLOWANCE > passed(pos, dfrac, d) // state[3]:
                return False
        while i >= 0:  # the non-essential terms, strongest first, while d can still make it
            q = order[i]
            if daddr[q] != 0:  # a chunk's weight at its number (0.0 where it lacks the term)
                acc += cursors.weights_at(daddr[q], d)
            else:
                p = cursors.seek(docs, lo[q], count[q], pos[q], d)
                pos[q] = p
                if p < count[q] and docs[lo[q] + p] == d:
                    acc += cursors.weights_at(waddr[q], p)
            if acc + prefix[i] < limits[0]:
                break
            i -= 1
        if acc >= 0.0 and i < 0:
            s = 0.0  # the exact score: query order, as the exhaustive paths add
            for q in range(T):
                p = pos[q]
                if daddr[q] != 0:  # (+ 0.0 where it lacks the term: the same bits)
                    s += cursors.weights_at(daddr[q], d)
                elif p < count[q] and docs[lo[q] + p] == d:
                    s += cursors.weights_at(waddr[q], p)
            offer(found, d, s)
        for j in range(ne, T):  # the essential cursors on d move past it (others on look-up)
            q = order[j]
            if pos[q] < count[q] and docs[lo[q] + pos[q]] == d:
                pos[q] += 1
    return True


def passed(pos, dfrac, d):  # pragma: no cover
    """Postings passed so far: the cursors' positions, and for a term read by chunk number
    (its cursor stays put) its share of postings per chunk times the chunks passed."""
    total = 0
    for q in range(pos.shape[0]):
        total += np.int64(dfrac[q] * d) if dfrac[q] > 0.0 else pos[q]
    return total


def block_rest(docs, lo, count, bmax, boff, order, ne, shallow, e, b):  # pragma: no cover
    """The most the non-essential terms can add to a chunk of block `b` of essential term `e`:
    per term, the best of its blocks overlapping the block's chunks (`shallow` keeps each
    term's first block not wholly before them: the blocks come in chunk order)."""
    first = docs[lo[e] + (b << cursors.SHIFT)]
    last = docs[lo[e] + min((b + 1) << cursors.SHIFT, count[e]) - 1]
    rest = 0.0
    for i in range(ne):
        q = order[i]
        base, n_q, blocks = lo[q], count[q], boff[q + 1] - boff[q]
        j = shallow[q]
        while j < blocks and docs[base + min((j + 1) << cursors.SHIFT, n_q) - 1] < first:
            j += 1
        shallow[q] = j
        best = 0.0
        while j < blocks and docs[base + (j << cursors.SHIFT)] <= last:
            best = max(best, bmax[boff[q] + j])
            j += 1
        rest += best
    return rest


def next_any(docs, lo, count, waddr, order, ne, pos, eligible, filtered, found):  # pragma: no cover
    """Several essential terms: (their next chunk, its essential weights summed), the sum -1
    when the chunk is not eligible or cannot reach the bound even with every other term at its
    best; (-1, -1.0) when they are all done."""
    d = np.int64(-1)
    for i in range(ne, order.shape[0]):
        q = order[i]
        if pos[q] < count[q]:
            x = np.int64(docs[lo[q] + pos[q]])
            if d < 0 or x < d:
                d = x
    if d < 0 or (filtered and not eligible[d]):
        return d, -1.0
    acc = 0.0
    for i in range(ne, order.shape[0]):
        q = order[i]
        if pos[q] < count[q] and docs[lo[q] + pos[q]] == d:
            acc += cursors.weights_at(waddr[q], pos[q])
    return d, acc if acc + found[6][ne] >= found[5][0] else -1.0


def offer(found, d, s):  # pragma: no cover
    """Chunk `d` scoring `s` joins the candidates and the heap if it can still make the top k;
    the bound to reach and the non-essential terms follow the k-th best."""
    heap, k, cand_docs, cand_scores, state, limits, prefix, theta0 = found
    if s <= 0.0 or s < theta0 or (state[0] == k and s < heap[0]):
        return
    m = state[1]
    cand_docs[m] = d
    cand_scores[m] = s
    state[1] = m + 1
    state[0] = cursors.push(heap, state[0], k, s)
    if state[0] == k and heap[0] * (1.0 - cursors.MARGIN) > limits[0]:
        limits[0] = heap[0] * (1.0 - cursors.MARGIN)
        state[2] = cursors.essential_from(prefix, state[2], limits[0])
