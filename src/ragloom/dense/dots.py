"""Dot products of chosen rows of a vector matrix with the query: the dense leg's exact
scoring. Compiled (numba), the rows are read in place: gathering 1,000 scattered rows of
384 floats into a fresh 1.5 MB copy first took 178 us against 82 (bench/dense_gather.py).
A row's score is the same bits whichever rows are scored with it, so exact ties stay ties.
The sum is reassociated (SIMD lanes), so its last bit may differ between CPUs, as BLAS's
did; without numba (or with RAGLOOM_KERNELS=0) numpy scores the gathered rows one at a time
through BLAS's dot."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ragloom.compiled import Compiled

# One row at a time (numpy >= 2: a ufunc over BLAS's single-threaded dot; older numpy:
# einsum). Not `vectors @ query`: a matrix-vector product goes to OpenBLAS's threaded gemv,
# which waits for a thread on every core; with the other core busy, 2,200 gathered vectors
# took 6-10 ms instead of 0.5-0.6 (bench/dense_scoring.py).
_numpy_dots = getattr(np, "vecdot", None) or (lambda rows, q: np.einsum("ij,j->i", rows, q))


def row_dots(
    vectors: np.ndarray, docs: np.ndarray | None, query: np.ndarray, compiled: bool = True
) -> np.ndarray:
    """float32 dot product of `query` with each row `docs` names (every row when None), by
    the compiled kernel unless `compiled` is False (or it cannot load): then numpy's."""
    kernel = _kernel.get() if compiled else None
    if kernel is None:
        if docs is None or len(docs) >= len(vectors) // 4:  # scoring all beats copying many
            scores = _numpy_dots(vectors, query)
            return (scores if docs is None else scores[docs]).astype(np.float32, copy=False)
        return _numpy_dots(np.take(vectors, docs, axis=0), query).astype(np.float32, copy=False)
    if docs is None:
        docs = np.arange(len(vectors), dtype=np.int64)
    out = np.empty(len(docs), np.float32)
    kernel(
        np.asarray(vectors, np.float32),
        np.asarray(docs, np.int64),
        np.ascontiguousarray(query, np.float32),
        out,
    )
    return out


def compiled() -> bool:
    """True when the compiled kernel scores (numba installed, RAGLOOM_KERNELS not 0). The
    first call loads (or compiles) it, about 0.2 s: `Index.warm()` pays it."""
    return _kernel.get() is not None


def _build(njit: Callable) -> Callable:
    """Compile the kernel with the prefetch hint, for arrays in memory and mapped files."""
    global _prefetch
    _prefetch = _prefetch_intrinsic()
    kernel = njit(cache=True, nogil=True, fastmath={"reassoc"})(_chosen_dots)
    query, out = np.zeros(2, np.float32), np.zeros(1, np.float32)
    for writable in (True, False):  # arrays in memory, then mapped files (read-only)
        vectors = np.zeros((1, 2), np.float32)
        vectors.setflags(write=writable)
        kernel(vectors, np.zeros(1, np.int64), query, out)  # compile or load it now
    return kernel


_AHEAD = 4  # rows whose first cache lines are asked for before they are scored
_LINES = 4  # (the hardware streams the rest of a row: 1000 random rows of 384 floats,
# 133 us without the hint, 82 with it; rows already in cache, 59 and 49)


def _chosen_dots(vectors, docs, query, out):  # pragma: no cover - compiled by numba
    """out[i] = vectors[docs[i]] . query, summed in the same order for every row; the rows
    a few places ahead are fetched meanwhile (they are scattered: no hardware guesses them)."""
    dimension = query.shape[0]
    count = docs.shape[0]
    base, stride = vectors.ctypes.data, vectors.strides[0]
    for i in range(min(_AHEAD, count)):
        for line in range(_LINES):
            _prefetch(base + docs[i] * stride + 64 * line)
    for i in range(count):
        if i + _AHEAD < count:
            for line in range(_LINES):
                _prefetch(base + docs[i + _AHEAD] * stride + 64 * line)
        row = vectors[docs[i]]
        total = np.float32(0.0)
        for j in range(dimension):
            total += row[j] * query[j]
        out[i] = total


_prefetch: Callable | None = None  # the intrinsic below, made when the kernel is loaded


def _prefetch_intrinsic() -> Callable:
    """`llvm.prefetch` (read, keep in every cache level) at an address, for numba; named
    for the LLVM that numba was built with (pointers lost their type in LLVM 15)."""
    from llvmlite import binding, ir
    from numba import types
    from numba.core import cgutils
    from numba.extending import intrinsic

    name = "llvm.prefetch.p0" if binding.llvm_version_info[0] >= 15 else "llvm.prefetch.p0i8"

    @intrinsic
    def prefetch(typingctx, address):
        def codegen(context, builder, signature, args):
            byte_pointer = ir.IntType(8).as_pointer()
            i32 = ir.IntType(32)
            hint = ir.FunctionType(ir.VoidType(), [byte_pointer, i32, i32, i32])
            function = cgutils.get_or_insert_function(builder.module, hint, name)
            pointer = builder.inttoptr(args[0], byte_pointer)
            builder.call(function, [pointer, i32(0), i32(3), i32(1)])
            return context.get_dummy_value()

        return types.void(types.int64), codegen

    return prefetch


_kernel = Compiled(_build)
