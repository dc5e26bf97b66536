"""`pipeline.top_k` against a plain reference: every candidate's score rounded to TIE_DIGITS,
sorted best first, tied rows by their stable key (else in the order given), the first k
kept, and the rows of a tie all carrying its best raw score. Candidates come best first (as
one leg or a fusion gives them) and in any order, with exact ties, near ties (apart in the
seventh significant digit) and none."""

from __future__ import annotations

import numpy as np
import pytest

from ragloom.retrieval.pipeline import Candidate, tie_score
from tests.fusion_reference import top_k


def _reference(cands: list[Candidate], k: int, keyed: bool) -> list[tuple[int, float]]:
    ties = [tie_score(c.score) for c in cands]
    keys = {c.row_id: (-c.row_id,) for c in cands} if keyed else {}
    order = sorted(range(len(cands)), key=lambda i: (-ties[i], keys.get(cands[i].row_id, ()), i))
    best: dict[float, float] = {}
    for i, c in enumerate(cands):
        best[ties[i]] = max(best.get(ties[i], c.score), c.score)
    return [(cands[i].row_id, best[ties[i]]) for i in order[:k]]


def _scores(rng: np.random.Generator, n: int, kind: str) -> list[float]:
    if kind == "distinct":
        return (rng.random(n) * 20).tolist()
    if kind == "exact ties":
        return (np.round(rng.random(n) * 4, 1) + 0.5).tolist()
    base = np.round(rng.random(n) * 4, 2) + 1.0  # near ties: equal to six digits, not seven
    return (base * (1 + rng.integers(0, 3, n) * 1e-8)).tolist()


@pytest.mark.parametrize("kind", ["distinct", "exact ties", "near ties"])
@pytest.mark.parametrize("keyed", [False, True])
def test_top_k_matches_the_reference(kind: str, keyed: bool) -> None:
    rng = np.random.default_rng(len(kind) * 2 + keyed)
    keys_of = (lambda rows: {r: (-r,) for r in rows}) if keyed else None
    for _ in range(300):
        n = int(rng.integers(0, 30))
        scores = _scores(rng, n, kind)
        if rng.random() < 0.7:
            scores.sort(reverse=True)  # best first, as the legs and fusion give them
        rows = rng.choice(1000, n, replace=False).tolist()
        cands = [Candidate(r, s, "lexical") for r, s in zip(rows, scores)]
        k = int(rng.integers(1, 15))
        got = [(c.row_id, c.score) for c in top_k(cands, k, keys_of)]
        assert got == _reference(cands, k, keyed), (kind, keyed, k, scores)
