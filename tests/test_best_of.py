"""`topn.best_of`, the dense leg's cut of a large pool to its best k: compiled, it returns
exactly what numpy's `best_first` does (the same indexes in the same order, ties to the
lower index, at the cut too), for pools full of exact ties, NaN among the scores, k beyond
the pool, float32 and float64; `RAGLOOM_KERNELS=0` leaves numpy's path."""

from __future__ import annotations

import numpy as np
import pytest

from ragloom.compiled import Compiled
from ragloom.dense import topn


@pytest.fixture(autouse=True)
def _fresh_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAGLOOM_KERNELS", raising=False)
    monkeypatch.setattr(topn, "_kernel", Compiled(topn._build))


def _numpy(scores: np.ndarray, k: int) -> list[int]:
    return topn.best_first(np.arange(len(scores)), scores, k).tolist()


@pytest.mark.parametrize("kind", [np.float32, np.float64])
def test_the_same_indexes_in_the_same_order_as_numpy(kind: type) -> None:
    assert topn.compiled()  # numba is a dependency: the compiled cut must be what runs
    rng = np.random.default_rng(3)
    for _ in range(300):
        size = int(rng.integers(1, 2500))
        k = int(rng.integers(1, 80))
        if rng.random() < 0.5:  # few distinct values: ties everywhere, at the cut too
            scores = rng.integers(0, 12, size).astype(kind)
        else:
            scores = rng.standard_normal(size).astype(kind)
        assert topn.best_of(scores, k).tolist() == _numpy(scores, k)


def test_edges() -> None:
    scores = np.array([0.5, 0.9, 0.5, -1.0], np.float32)
    assert topn.best_of(scores, 10).tolist() == [1, 0, 2, 3]  # k beyond the pool: all of it
    assert topn.best_of(scores, 0).tolist() == []
    assert topn.best_of(np.zeros(0, np.float32), 3).tolist() == []
    ascending = np.arange(600, dtype=np.float32)  # every score better than all before it
    assert topn.best_of(ascending, 5).tolist() == [599, 598, 597, 596, 595]


def test_a_nan_leaves_the_order_to_numpy() -> None:
    scores = np.array([0.3, np.nan, 0.9, 0.1, 0.9], np.float32)
    for k in (1, 2, 4, 5):
        assert topn.best_of(scores, k).tolist() == _numpy(scores, k)


def test_without_kernels_numpy_serves(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGLOOM_KERNELS", "0")
    monkeypatch.setattr(topn, "_kernel", Compiled(topn._build))
    assert not topn.compiled()
    scores = np.random.default_rng(1).standard_normal(900).astype(np.float32)
    assert topn.best_of(scores, 7).tolist() == _numpy(scores, 7)
