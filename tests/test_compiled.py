"""`ragloom.compiled` for the BM25 kernels: a numba that cannot build them leaves numpy's pruned
paths searching, exactly, says so once, and leaves no piece of `cursors`, `maxscore` or
`windows` half-compiled."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from ragloom.compiled import Compiled
from ragloom.lexical import cursors, kernels, maxscore, topk, windows
from ragloom.lexical.bm25 import BM25Params, bm25_idf
from ragloom.lexical.topk import Stats, Target, search
from ragloom.segments.postings import Postings
from tests.segment_data import build_segment


def _pieces() -> dict[tuple[object, str], object]:
    """What the kernels' build replaces in place, as it stands now."""
    found = {
        (m, name): getattr(m, name) for m in (cursors, maxscore, windows) for name in m.COMPILED
    }
    found[(cursors, "weights_at")] = cursors.weights_at
    return found


def _segment(rng: np.random.Generator, n: int, vocab: int):
    postings = []
    for _ in range(n):
        words = np.minimum(rng.zipf(1.3, size=int(rng.integers(5, 60))), vocab) - 1
        ids, counts = np.unique(words, return_counts=True)
        postings.append(Postings(ids.astype(np.uint32), counts.astype(np.uint32)))
    return build_segment(np.arange(1, n + 1), postings, [{}] * n)


def test_kernels_that_cannot_build_leave_numpy_searching_exactly(monkeypatch) -> None:
    def no_intrinsic() -> None:
        raise RuntimeError("this LLVM cannot build the intrinsic")

    monkeypatch.delenv("RAGLOOM_KERNELS", raising=False)
    monkeypatch.setattr(topk, "SMALL_SEGMENT", 64)  # prune even this test's segment
    monkeypatch.setattr(topk, "SMALL_WORK", 0)
    monkeypatch.setattr(kernels, "_intrinsics", no_intrinsic)
    monkeypatch.setattr(kernels, "_kernels", Compiled(kernels._build))
    before = _pieces()
    with pytest.warns(RuntimeWarning, match=r"ragloom\.lexical\.kernels.*numpy serves"):
        assert not kernels.available()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said once, not at every search
        assert not kernels.available()
    assert _pieces() == before
    rng = np.random.default_rng(11)
    segment = _segment(rng, 6000, vocab=2000)
    targets = [Target(segment, None)]
    for terms in ([0, 5, 40], [3], [10, 20, 30, 40], [1, 1, 7]):
        df = {t: len(segment.postings(t)[0]) for t in terms}
        stats = Stats({t: bm25_idf(df[t], segment.n) for t in terms}, segment.total_length / 6000)
        for k in (1, 10, 100):
            fast = search(targets, terms, k, stats, BM25Params())
            slow = search(targets, terms, k, stats, BM25Params(), prune=False)
            assert fast[0].tolist() == slow[0].tolist() and len(fast[0]) == min(k, len(slow[0]))
            assert fast[1].tolist() == slow[1].tolist()


def test_a_build_that_fails_midway_puts_every_piece_back() -> None:
    before = _pieces()
    built: list[object] = []

    def njit(**options: object):
        def compile_(function):
            built.append(function)
            if len(built) == 3:
                raise RuntimeError("numba cannot lower this function")
            return lambda *args: function(*args)

        return compile_

    with pytest.raises(RuntimeError, match="cannot lower"):
        kernels._build(njit)
    assert len(built) == 3  # two pieces were replaced before the failure
    assert _pieces() == before
