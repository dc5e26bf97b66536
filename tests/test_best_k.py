"""The lexical top k's running best (`topk._Best`) keeps exactly the k best (score, row)
pairs offered, ties to the lower row, a row offered twice counted once: for a top 10 and for
deep pools (cut by a partition first) alike."""

from __future__ import annotations

import numpy as np
import pytest

from ragloom.lexical.topk import _Best


@pytest.mark.parametrize("k", [1, 3, 10, 40, 100, 1000])
def test_the_best_k_equal_sorting_everything_offered(k: int) -> None:
    rng = np.random.default_rng(k)
    for _ in range(20):
        best = _Best(k)
        offered: dict[int, float] = {}
        for _ in range(int(rng.integers(1, 7))):
            size = int(rng.integers(0, 2 * k + 5))
            rows = rng.integers(0, 4 * k + 10, size).astype(np.int64)
            rows = np.unique(rows)  # one segment offers a row once
            scores = np.round(rng.random(len(rows)) * 4, 1)  # few distinct scores: many ties
            for row, score in zip(rows.tolist(), scores.tolist()):
                offered.setdefault(row, score)  # a row scores the same everywhere
            scores = np.array([offered[r] for r in rows.tolist()], np.float64)
            best.offer(rows, scores)
            want = sorted(offered.items(), key=lambda pair: (-pair[1], pair[0]))[:k]
            assert best.rows.tolist() == [row for row, _ in want]
            assert best.scores.tolist() == [score for _, score in want]
            kth = want[-1][1] if len(want) == k else 0.0
            assert best.threshold == kth
