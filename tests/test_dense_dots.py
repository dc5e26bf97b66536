"""Scoring chosen rows of a segment's vectors against the query (`ragloom.dense.dots`): the
compiled kernel reads the rows in place and agrees with numpy's float64 dot products; a row's
score is the same bits whichever rows are scored with it (exact ties stay ties), for mapped
(read-only) vectors too, and without numba the numpy path gives the same answers."""

from __future__ import annotations

import numpy as np
import pytest

from ragloom.compiled import Compiled
from ragloom.dense import dots


def _unit_rows(count: int, dimension: int, seed: int = 0) -> np.ndarray:
    rows = np.random.default_rng(seed).standard_normal((count, dimension)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


@pytest.fixture(autouse=True)
def _kernels_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAGLOOM_KERNELS", raising=False)
    monkeypatch.setattr(dots, "_kernel", Compiled(dots._build))  # afresh, whatever ran before


@pytest.mark.parametrize("dimension", [384, 13, 1])
@pytest.mark.parametrize("read_only", [False, True])
def test_chosen_rows_match_float64_dot_products(dimension: int, read_only: bool) -> None:
    vectors = _unit_rows(500, dimension)
    vectors.setflags(write=not read_only)
    query = _unit_rows(1, dimension, seed=9)[0]
    assert dots.compiled()  # numba is a dependency: the compiled kernel must be what runs
    for docs in (np.array([3, 499, 0, 3], np.int64), np.arange(500), np.array([], np.int64)):
        got = dots.row_dots(vectors, docs, query)
        want = vectors[docs].astype(np.float64) @ query.astype(np.float64)
        assert got.dtype == np.float32 and got.shape == (len(docs),)
        np.testing.assert_allclose(got, want, rtol=0, atol=2e-6)
    every = dots.row_dots(vectors, None, query)
    np.testing.assert_array_equal(every, dots.row_dots(vectors, np.arange(500), query))


def test_a_rows_score_does_not_depend_on_its_company() -> None:
    dimension = 13  # rows of 52 bytes: copies of one vector start at different alignments
    vectors = _unit_rows(300, dimension)
    vectors[7::11] = vectors[7]  # exact copies of one vector across the matrix
    query = _unit_rows(1, dimension, seed=4)[0]
    together = dots.row_dots(vectors, None, query)
    copies = together[7::11]
    assert np.all(copies == copies[0])  # exact ties stay exact
    for row in (0, 7, 150, 299):
        alone = dots.row_dots(vectors, np.array([row]), query)
        assert alone[0] == together[row]


@pytest.mark.parametrize("docs_type", [np.int32, np.uint32, np.int64])
def test_any_integer_row_numbers(docs_type: type) -> None:
    vectors = _unit_rows(64, 384)
    query = _unit_rows(1, 384, seed=2)[0]
    docs = np.array([63, 1, 2], docs_type)
    want = dots.row_dots(vectors, np.array([63, 1, 2], np.int64), query)
    np.testing.assert_array_equal(dots.row_dots(vectors, docs, query), want)


def test_without_the_kernel_numpy_gives_the_same_answers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    vectors = _unit_rows(200, 384)
    query = _unit_rows(1, 384, seed=5)[0]
    docs = np.array([5, 150, 7, 199], np.int64)
    compiled = dots.row_dots(vectors, docs, query)
    monkeypatch.setattr(dots, "_kernel", Compiled(lambda njit: None))
    assert not dots.compiled()
    plain = dots.row_dots(vectors, docs, query)
    np.testing.assert_allclose(plain, compiled, rtol=0, atol=2e-6)
    np.testing.assert_array_equal(dots.row_dots(vectors, None, query)[docs], plain)


def test_a_numba_that_cannot_build_the_kernel_leaves_numpy_scoring(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_hint() -> None:
        raise RuntimeError("this LLVM has no prefetch hint")

    monkeypatch.setattr(dots, "_prefetch_intrinsic", no_hint)
    monkeypatch.setattr(dots, "_kernel", Compiled(dots._build))
    with pytest.warns(RuntimeWarning, match="ragloom.dense.dots.*numpy serves"):
        assert not dots.compiled()
    vectors = _unit_rows(50, 384)
    query = _unit_rows(1, 384, seed=3)[0]
    want = vectors.astype(np.float64) @ query.astype(np.float64)
    np.testing.assert_allclose(dots.row_dots(vectors, None, query), want, rtol=0, atol=2e-6)
