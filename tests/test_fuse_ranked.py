"""The search path's fusion (`fusion.fuse`, one leg alone or both fused by every method)
gives exactly what the reference fusion over candidate lists gives (`tests.fusion_reference`):
the same candidates, field for field, in the same order, over legs with ties, overlaps,
negative cosines, empty legs, caller weights and metadata preferences. `top_k` and
`tie_ranks`, which round only the scores that can tie, give what rounding every score gives."""

from __future__ import annotations

import numpy as np
import pytest

from ragloom.retrieval.fusion import FUSIONS, fuse
from ragloom.retrieval.pipeline import LEXICAL, make_candidate, tie_ranks, tie_score
from tests.fusion_reference import reference_fuse, top_k


def _leg(rng: np.random.Generator, size: int, pool: int, dense: bool):
    rows = rng.choice(pool, size=size, replace=False).astype(np.int64)
    if dense:
        scores = np.sort(rng.uniform(-0.3, 0.9, size).astype(np.float32))[::-1]
    else:
        scores = np.sort(rng.gamma(2.0, 3.0, size))[::-1]
    if size > 3:  # ties: equal scores, and scores equal to 6 significant digits only
        scores[1] = scores[0]
        scores[3] = scores[2] * (1 + 1e-9)
        scores = np.sort(scores)[::-1]
    return rows, scores


def _cases():
    rng = np.random.default_rng(23)
    for case in range(60):
        pool = int(rng.integers(5, 120))
        lex = _leg(rng, int(rng.integers(0, min(pool, 50) + 1)), pool, False)
        den = _leg(rng, int(rng.integers(0, min(pool, 50) + 1)), pool, True)
        yield case, lex, den


def _preferences(lex, den):
    """A metadata score for every row of both legs."""
    return {row: (row % 3) / 2 for row in [*lex[0].tolist(), *den[0].tolist()]}


@pytest.mark.parametrize("method", FUSIONS)
def test_fused_from_ranked_legs_equals_fused_candidates(method):
    profile = {"lexical_mrr": 0.4, "dense_mrr": 0.6, "probes": 50}
    compared = 0
    for case, lex, den in _cases():
        ceiling = None if case % 3 == 0 else float(lex[1].max() * 1.5 if len(lex[1]) else 1.0)
        weights = {"lexical": 1.0, "dense": 2.0} if case % 5 == 0 else {}
        meta = _preferences(lex, den) if case % 4 == 0 else None
        if meta is not None:
            weights = {**weights, "metadata": 0.5}
        expected, _ = reference_fuse(
            lex, den, method, 60.0, weights, "zscore", ceiling, profile, meta
        )
        got, _ = fuse(
            lex,
            den,
            method=method,
            weights=weights,
            ceiling=ceiling,
            profile=profile,
            preferences=meta,
        )
        assert got == expected, case
        assert [c.row_id for c in got] == [c.row_id for c in expected]
        compared += len(got)
    assert compared > 1000


def test_adaptive_from_ranked_legs_keeps_every_field():
    for _, lex, den in _cases():
        expected, _ = reference_fuse(lex, den, "adaptive", ceiling=7.5)
        got, _ = fuse(lex, den, ceiling=7.5)
        assert [vars(c) for c in got] == [vars(c) for c in expected]


def test_one_leg_alone_equals_the_reference():
    for case, lex, den in _cases():
        ceiling = None if case % 2 else 9.0
        assert fuse(lex, None, ceiling=ceiling) == reference_fuse(lex, None, ceiling=ceiling)
        assert fuse(None, den) == reference_fuse(None, den)


def _reference_top_k(candidates, k, keys_of=None):
    """top_k as it was written first: every score rounded, then sorted."""
    from collections import Counter
    from dataclasses import replace

    ranked = sorted(((tie_score(c.score), c) for c in candidates), key=lambda p: -p[0])
    if not ranked:
        return []
    cut = ranked[min(k, len(ranked)) - 1][0]
    head = [p for p in ranked if p[0] >= cut]
    sizes = Counter(tie for tie, _ in head)
    if keys_of is not None:
        tied = [c.row_id for tie, c in head if sizes[tie] > 1]
        keys = keys_of(tied) if tied else {}
        head.sort(key=lambda p: (-p[0], keys.get(p[1].row_id, ())))
    best: dict[float, float] = {}
    for tie, c in head:
        best[tie] = max(best.get(tie, c.score), c.score)
    return [replace(c, score=best[tie]) if sizes[tie] > 1 else c for tie, c in head[:k]]


def _near_ties(rng: np.random.Generator, size: int) -> list[float]:
    """Scores with exact ties, ties to 6 digits, near misses either side, both signs."""
    base = rng.choice([0.5, 3.0, 12.0, -0.2, 1e-7, 0.0, 999999.5], size=size)
    nudge = rng.choice([0.0, 0.0, 1e-12, 4e-7, 5e-6, 1e-5, 3e-5, 0.01], size=size)
    return (base * (1 + nudge * rng.choice([-1, 1], size=size))).tolist()


def test_top_k_and_tie_ranks_equal_rounding_every_score():
    rng = np.random.default_rng(5)
    for case in range(400):
        size = int(rng.integers(0, 40))
        scores = _near_ties(rng, size)
        if case % 50 == 0 and size:
            scores[0] = float("nan")
        rows = rng.permutation(1000)[:size].tolist()
        cands = [
            make_candidate({"row_id": r, "score": s, "match": LEXICAL})
            for r, s in zip(rows, scores)
        ]
        keys = (lambda tied: {r: (str(r % 7), r) for r in tied}) if case % 2 else None
        for k in (1, 3, 10, 50):
            assert top_k(cands, k, keys) == _reference_top_k(cands, k, keys), (case, k)
        ordered = sorted(scores, reverse=True) if case % 3 else scores
        expected, previous, rank = [], None, 0
        for position, score in enumerate(ordered, start=1):
            if tie_score(score) != previous:
                rank, previous = position, tie_score(score)
            expected.append(rank)
        assert tie_ranks(ordered) == expected, case
