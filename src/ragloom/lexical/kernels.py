"""Compiled BM25 top-k (numba): Python's per-step overhead, not the arithmetic, is what costs.

`score_top` adds each query term's cached BM25 weights into one score per chunk, term by term
in query order (the very additions `ragloom.lexical.topk._score_all` makes with numpy, so the
scores are equal to the last bit), and returns every chunk that can be in the top k: those
scoring at least the k-th best eligible score, ties kept. `score_top_pruned` returns the same
while reading only the postings that can matter (block-max MaxScore, `ragloom.lexical.maxscore`,
else block-max windows, `ragloom.lexical.windows`; their shared pieces: `ragloom.lexical.cursors`,
compiled here first). Nothing is reordered and no fast math is allowed, so the results do not
depend on the CPU (AVX2 or AVX-512 alike). Without numba installed `available()` is False and
the numpy paths run as before, and so they do (with a warning) when this numba cannot build
the kernels (`ragloom.compiled`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ragloom.compiled import Compiled
from ragloom.lexical import cursors, maxscore, windows

_local = threading.local()


def available() -> bool:
    """True when the compiled kernels can run (numba installed, not switched off with
    RAGLOOM_KERNELS=0, and able to build them). The first call imports numba and loads (or
    compiles) the kernels, about 0.3 s, paid at `Index.warm()` or by the first lexical search,
    never at import."""
    return _kernels.get() is not None


def serve(large: Callable[[], bool]) -> bool:
    """Whether the compiled kernels serve a search: yes when they are loaded, else when
    `large()` says it reads a large segment (they are loaded then: numpy's paths cost time
    in proportion to such a segment's chunks, theirs to the postings read). A search of small
    segments alone never loads them: numpy scores every match there about as fast, with the
    same bits, so a small index (a folder of notes, its first `ragloom index`) never waits
    for numba."""
    if _kernels.loaded() is not None:
        return True
    return large() and _kernels.get() is not None


def _build(njit: Callable) -> dict[str, Callable]:
    """The kernels, compiled and run once each; the pieces they call (`cursors`, `maxscore`,
    `windows`) are compiled in place first, and put back as they were if anything fails."""
    pieces = [(module, name) for module in (cursors, maxscore, windows) for name in module.COMPILED]
    before = {(module, name): getattr(module, name) for module, name in pieces}
    before[(cursors, "weights_at")] = cursors.weights_at
    try:
        return _compile(njit, pieces)
    except Exception:
        for (module, name), function in before.items():
            setattr(module, name, function)
        raise


def _compile(njit: Callable, pieces: list[tuple[Any, str]]) -> dict[str, Callable]:
    cursors.weights_at = _intrinsics()
    for module, name in pieces:  # the pieces first: kernels call them compiled
        function = getattr(module, name)
        plain = getattr(function, "py_func", function)  # (loaded once more in tests)
        setattr(module, name, njit(cache=True, nogil=True)(plain))
    compiled = {
        name: njit(cache=True, nogil=True)(function)
        for name, function in (
            ("accumulate", _accumulate),
            ("select", _select),
            ("maxscore", maxscore.maxscore),
            ("windows", windows.windows),
            ("weigh", _weigh),
        )
    }
    scores, touched = np.zeros(4), np.zeros(4, np.int64)  # compile or load from the cache now
    count = compiled["accumulate"](scores, touched, 0, np.arange(2, dtype=np.uint32), np.ones(2))
    compiled["select"](scores, touched, count, np.zeros(1, np.bool_), False, 1)
    docs = np.arange(2, dtype=np.uint32)
    for writable in (True, False):  # memory segments, then mapped files (read-only arrays)
        docs.setflags(write=writable)
        for share in (0, 1):  # windows alone, then MaxScore
            _run_pruned(
                compiled, docs, [(0, 2)], [np.ones(2)], [np.ones(1)], [1.0], 2, None, 1, 0.0, share
            )
    for writable in (True, False):  # a segment's tfs are uint16, or uint32 past 65,535
        docs.setflags(write=writable)
        for tf_type in (np.uint16, np.uint32):
            tfs = np.ones(2, tf_type)
            tfs.setflags(write=writable)
            compiled["weigh"](docs, tfs, np.ones(2), 1.0, 2.0, 128, np.empty(2), np.empty(1))
    return compiled


_kernels: Compiled[dict[str, Callable]] = Compiled(_build)


def _intrinsics():
    """`cursors.weights_at` as a numba intrinsic: one float64 load at an address + index."""
    from llvmlite import ir
    from numba import types
    from numba.extending import intrinsic

    @intrinsic
    def weights_at(typingctx, address, index):
        def codegen(context, builder, signature, args):
            pointer = builder.inttoptr(args[0], ir.DoubleType().as_pointer())
            return builder.load(builder.gep(pointer, [args[1]]))

        return types.float64(types.int64, types.int64), codegen

    return weights_at


def ready() -> bool:
    """True when the kernels are loaded already (never loads them)."""
    return _kernels.loaded() is not None


def weigh(
    docs: np.ndarray, tfs: np.ndarray, norm: np.ndarray, idf: float, k1: float
) -> tuple[np.ndarray, np.ndarray, float]:
    """A term's BM25 weights at its postings and what the top k derives from them, in one
    compiled pass: (weights, their maxima over blocks of `cursors.BLOCK_SIZE`, the smallest
    weight (0.0 for none)). `norm` is the segment's k1*(1-b+b*len/avgdl) by chunk number, so
    the weights are `bm25_weights`' own arithmetic in its order (the same bits); maxima and
    minimum are exact. A term's first use after open reads its postings once, not five times."""
    compiled = _kernels.get()
    if compiled is None:
        raise RuntimeError("the compiled kernels are not available")
    out = np.empty(len(docs), np.float64)
    maxima = np.empty(-(-len(docs) // cursors.BLOCK_SIZE), np.float64)
    least = compiled["weigh"](
        docs, tfs, norm, float(idf), float(k1) + 1.0, cursors.BLOCK_SIZE, out, maxima
    )
    return out, maxima, least


# The kernels as plain Python: `_load` compiles them.


def _weigh(docs, tfs, norm, idf, k1_plus_one, block, out, maxima):  # pragma: no cover
    least = np.inf if docs.shape[0] else 0.0
    for b in range(maxima.shape[0]):
        top = -np.inf
        for j in range(b * block, min((b + 1) * block, docs.shape[0])):
            tf = np.float64(tfs[j])
            weight = idf * (tf * k1_plus_one) / (tf + norm[docs[j]])
            out[j] = weight
            top = max(top, weight)
            least = min(least, weight)
        maxima[b] = top
    return least


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
        if size < k or s > heap[0]:
            size = cursors.push(heap, size, k, s)
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
    compiled = _kernels.get()
    accumulate, select = compiled["accumulate"], compiled["select"]  # type: ignore[index]
    scores, touched = _buffers(n)
    count = 0
    for docs, weights in postings:
        if len(docs):
            count = accumulate(scores, touched, count, docs, weights)
    mask = eligible if eligible is not None else np.zeros(1, np.bool_)
    return select(scores, touched, count, mask, eligible is not None, max(k, 1))


def _run_pruned(
    compiled, docs, ranges, weights, block_maxima, minima, n, eligible, k, theta, share, dense=None
):
    # (plain lists into one array each: numpy's per-call costs add up to ~20 us a segment)
    offsets, total, size = [0], 0, len(docs)
    for w, b, (start, stop) in zip(weights, block_maxima, ranges, strict=True):
        # read by address in the kernel: float64, contiguous, one per posting, alive meanwhile
        if w.dtype != np.float64 or not w.flags.c_contiguous or len(w) != stop - start:
            raise ValueError("weights must be contiguous float64 arrays, one per posting")
        if len(b) != -(-len(w) // cursors.BLOCK_SIZE) or not 0 <= start <= stop <= size:
            raise ValueError("block maxima or posting ranges do not match the weights")
        total += len(b)
        offsets.append(total)
    lo = np.array([r[0] for r in ranges], np.int64)
    hi = np.array([r[1] for r in ranges], np.int64)
    boff = np.array(offsets, np.int64)
    bmax = np.concatenate(block_maxima) if block_maxima else np.zeros(0)
    address = np.array([w.ctypes.data for w in weights], np.int64)
    mask = eligible if eligible is not None else np.zeros(1, np.bool_)
    filtered, k, theta = eligible is not None, max(k, 1), float(theta)
    if share > 0:
        wmin = np.array(minima, np.float64)
        if dense is None:
            dense = [None] * len(weights)
        if len(dense) != len(weights) or any(
            x is not None and (x.dtype != np.float64 or not x.flags.c_contiguous or len(x) != n)
            for x in dense
        ):  # (read by address in the kernel, at any chunk number below n)
            raise ValueError("weights by chunk number must be contiguous float64 arrays of n")
        daddr = np.array([0 if x is None else x.ctypes.data for x in dense], np.int64)
        dfrac = np.array([0.0 if x is None else (r[1] - r[0]) / n for x, r in zip(dense, ranges)])
        found, scores, done = compiled["maxscore"](
            docs, lo, hi, address, wmin, (daddr, dfrac), bmax, boff, mask, filtered, k, theta, share
        )
        if done:
            return found, scores
    return compiled["windows"](docs, lo, hi, address, bmax, boff, n, mask, filtered, k, theta)


def by_chunk(docs: np.ndarray, weights: np.ndarray, n: int) -> np.ndarray:
    """A term's weights by chunk number in a segment of `n` chunks (0.0 where a chunk lacks
    it), from its postings' chunks and weights: MaxScore looks a chunk's weight up there in one
    read instead of seeking through the postings (worth it, and at most twice the postings'
    memory, for a term in more than half the chunks)."""
    dense = np.zeros(n, np.float64)
    dense[docs] = weights
    return dense


def score_top_pruned(
    docs: np.ndarray,
    ranges: Sequence[tuple[int, int]],
    weights: Sequence[np.ndarray],
    block_maxima: Sequence[np.ndarray],
    n: int,
    eligible: np.ndarray | None,
    k: int,
    theta: float,
    share: int,
    minima: Sequence[float] | None = None,
    dense: Sequence[np.ndarray | None] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """`score_top`'s answer for a segment of `n` chunks (and no chunk below `theta`, a k-th
    score already reached elsewhere), reading only the postings that can matter. `docs` is the
    segment's postings array; query term q (query order) owns docs[ranges[q][0]:ranges[q][1]]
    with `weights[q]`, whose maxima over blocks of `cursors.BLOCK_SIZE` are block_maxima[q].

    Block-max MaxScore (`ragloom.lexical.maxscore`) runs first, while no more than 1 in `share`
    postings passed needs a look-up in the non-essential terms (0: not at all); past that,
    windows of chunks with block-max bounds (`ragloom.lexical.windows`) score the segment.
    `minima[q]` is the smallest of weights[q] (0.0 for none; computed when not given: callers
    that search often keep it beside the weights): MaxScore is not tried when it tells that
    every posting would need a look-up. `dense[q]`, when not None, is `by_chunk` of term q
    (computed for the terms in more than half the chunks when `dense` is not given)."""
    if minima is None:
        minima = [float(w.min()) if len(w) else 0.0 for w in weights]
    if dense is None:  # a term in more than half the chunks: its weights by chunk number too
        dense = [
            by_chunk(docs[a:b], w, n) if 2 * len(w) > n else None
            for (a, b), w in zip(ranges, weights)
        ]
    if len(minima) != len(weights):
        raise ValueError("one minimum weight per query term")
    compiled = _kernels.get()
    return _run_pruned(
        compiled, docs, ranges, weights, block_maxima, minima, n, eligible, k, theta, share, dense
    )
