"""The search path's adaptive fusion (`fusion.fuse`) and tie ranks (`pipeline.tie_ranks`)
give exactly what the reference paths give, bit for bit: every field of every candidate, in
the same order, with the same key order in its `__dict__` (scores compared by their bits,
not `==`), over legs with exact ties, ties to 6 significant digits, near misses either side
of a rounding boundary, overlaps, a row twice in one leg, negative and zero cosines, empty
legs, caller weights and metadata preferences. The references: `tests.fusion_reference`
(each leg's `leg_candidates`, their merge, adaptive fusion over candidates) and the rank
loop below."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np

from ragloom.retrieval.adaptive import support
from ragloom.retrieval.fusion import fuse
from ragloom.retrieval.pipeline import LEXICAL, make_candidate, tie_ranks, tie_score
from tests.fusion_reference import reference_fuse, top_k
from tests.test_fuse_ranked import _reference_top_k


def _bits(value):
    """A field's value as compared: floats by their bits (0.0 and -0.0, NaNs apart)."""
    if isinstance(value, float):
        return ("float", value.hex() if value == value else "nan")
    return (type(value).__name__, value)


def _exact(cands):
    return [[(key, _bits(value)) for key, value in vars(c).items()] for c in cands]


def _reference_ranks(scores) -> list[int]:
    out, previous, rank = [], None, 0
    for position, score in enumerate(scores, start=1):
        tie = tie_score(float(score))
        if tie != previous:
            rank, previous = position, tie
        out.append(rank)
    return out


def _scores(rng: np.random.Generator, size: int, dense: bool) -> np.ndarray:
    if dense:
        scores = rng.uniform(-0.3, 0.95, size)
        scores[rng.random(size) < 0.1] = 0.0
    else:
        scores = rng.gamma(2.0, 3.0, size)
    for i in range(1, size):  # ties and near ties with the score before
        kind = rng.integers(0, 6)
        if kind == 0:
            scores[i] = scores[i - 1]
        elif kind == 1:
            scores[i] = scores[i - 1] * (1 + rng.choice([1e-9, 4e-7, 5e-6, 1e-5, 2e-5]))
    scores = np.sort(scores)[::-1]
    return scores.astype(np.float32) if dense else scores


def _leg(rng: np.random.Generator, size: int, pool: int, dense: bool, twice: bool):
    rows = rng.choice(pool, size=size, replace=pool < size).astype(np.int64)
    if twice and size > 2:  # a row twice in one leg
        rows[int(rng.integers(1, size))] = rows[0]
    return rows, _scores(rng, size, dense)


def test_fuse_is_the_reference_fusion_bit_for_bit():
    rng = np.random.default_rng(2311)
    profile = {"lexical_mrr": 0.3, "dense_mrr": 0.5, "probes": 80}
    compared = overlapping = 0
    for case in range(400):
        pool = int(rng.integers(1, 150))
        twice = case % 7 == 0
        lex = _leg(rng, int(rng.integers(0, 60)), pool, False, twice)
        den = _leg(rng, int(rng.integers(0, 60)), pool, True, twice and case % 2 == 0)
        ceiling = None if case % 3 == 0 else float(lex[1].max() * 1.2 if len(lex[1]) else 2.0)
        weights = {"lexical": 2.0, "dense": 1.0} if case % 5 == 0 else {}
        meta = None
        if case % 6 == 0:
            meta = {row: (row % 4) / 3 for row in [*lex[0].tolist(), *den[0].tolist()]}
            weights = {**weights, "metadata": 0.25}
        chosen_profile = profile if case % 2 else None
        expected, _ = reference_fuse(
            lex, den, "adaptive", 60.0, weights, "zscore", ceiling, chosen_profile, meta
        )
        got, _ = fuse(
            lex, den, weights=weights, ceiling=ceiling, profile=chosen_profile, preferences=meta
        )
        assert _exact(got) == _exact(expected), case
        compared += len(got)
        overlapping += sum(c.match == "both" for c in got)
    assert compared > 10000 and overlapping > 1000


def test_fuse_with_equal_fused_scores_keeps_the_merge_order():
    rows = np.arange(30, dtype=np.int64)
    lex = (rows[:20], np.full(20, 3.0))
    den = (rows[10:], np.full(20, 0.5, np.float32))
    expected, _ = reference_fuse(lex, den, ceiling=6.0)
    got, _ = fuse(lex, den, ceiling=6.0)
    assert _exact(got) == _exact(expected)
    assert len({c.score for c in got}) < len(got)


def test_fuse_with_nan_scores_is_the_reference():
    lex = (np.array([4, 5, 6], np.int64), np.array([3.0, float("nan"), 1.0]))
    den = (np.array([6, 7, 8], np.int64), np.array([0.9, float("nan"), 0.1], np.float32))
    expected, _ = reference_fuse(lex, den)
    assert _exact(fuse(lex, den)[0]) == _exact(expected)


def _boundaries(rng: np.random.Generator, size: int) -> list[float]:
    """Scores on, and one or two units in the last place either side of, the points where
    rounding to 6 significant digits goes up (x.xxxxx5), across magnitudes and signs."""
    digits = rng.integers(100000, 1000000, size)
    exponent = rng.integers(-12, 12, size)
    halfway = (digits + 0.5) * 10.0 ** (exponent - 5)
    steps = rng.integers(-2, 3, size)
    sign = rng.choice([-1.0, 1.0], size)
    out = [
        sign[i] * float(np.nextafter(halfway[i], np.inf if steps[i] > 0 else -np.inf))
        if steps[i]
        else sign[i] * float(halfway[i])
        for i in range(size)
    ]
    return out


def test_tie_ranks_match_rounding_every_score_at_rounding_boundaries():
    rng = np.random.default_rng(99)
    tied: Counter = Counter()
    for case in range(300):
        size = int(rng.integers(1, 60))
        base = _boundaries(rng, size)
        scores = []
        for value in base:  # each next to its neighbours one or two ulps away
            scores.append(value)
            if rng.random() < 0.5:
                scores.append(float(np.nextafter(value, -math.copysign(np.inf, value))))
        if case % 2:
            scores.sort(reverse=True)
        if case % 3 == 0:  # float32 cosines, as the dense leg gives them
            scores = np.array(scores, np.float32).tolist()
        expected = _reference_ranks(scores)
        assert tie_ranks(scores) == expected, case
        assert tie_ranks(np.array(scores)) == expected, case
        for i in range(1, len(scores)):
            close = abs(scores[i] - scores[i - 1]) <= 2e-5 * abs(scores[i])
            tied[(scores[i] != scores[i - 1], expected[i] == expected[i - 1], close)] += 1
    assert tied[(True, True, True)] > 500  # unequal scores tied to 6 digits
    assert tied[(True, False, True)] > 500  # close scores either side of a boundary


def test_tie_ranks_of_special_values():
    cases = [
        [],
        [1.0],
        [float("nan"), float("nan"), 1.0],
        [float("inf"), float("inf"), 1e308, -1e308, float("-inf")],
        [0.0, -0.0, 0.0, 5e-324, 1e-323, 1e-320, 1.0000001e-320, 2.2e-308, 2.2000001e-308],
        [3, 3, 2, True],
        [1e-300, 1.000001e-300, 1.0000049e-300, 1.0000051e-300],
    ]
    for scores in cases:
        for repeats in (1, 5):  # a few scores, and enough for the array path
            assert tie_ranks(scores * repeats) == _reference_ranks(scores * repeats), scores


def test_tie_ranks_of_tiny_and_subnormal_scores():
    rng = np.random.default_rng(7)
    tiny = np.finfo(np.float64).smallest_subnormal
    for case in range(300):
        scale = rng.choice([1.0, 1e3, 1e6, 1e12, 1e15, 4.5e15, 1e20, 1e30, 2.2e33, 2e34])
        steps = np.cumsum(rng.choice([0, 1, 2, 3, 1000], size=int(rng.integers(2, 30))))
        relative = rng.choice([1e-16, 1e-7, 1e-6, 5e-6, 1e-5], size=len(steps))
        values = (scale * tiny) * (1 + steps * relative) if case % 3 else (scale + steps) * tiny
        values = sorted(values.tolist(), reverse=bool(case % 2))
        assert tie_ranks(values) == _reference_ranks(values), (case, values[:3])


def test_top_k_of_special_scores_is_rounding_every_score():
    specials = [float("inf"), float("-inf"), float("nan"), 0.0, -0.0, 1e308, -1e308, 5e-324]
    rng = np.random.default_rng(3)
    for case in range(300):
        size = int(rng.integers(1, 30))
        scores = rng.choice([*specials, 0.5, 0.5000001, 2.0], size=size).tolist()
        cands = [
            make_candidate({"row_id": r, "score": s, "match": LEXICAL})
            for r, s in enumerate(scores)
        ]
        keys = (lambda tied: {r: (str(r % 5), r) for r in tied}) if case % 2 else None
        for k in (1, 4, 30):
            assert _exact(top_k(cands, k, keys)) == _exact(_reference_top_k(cands, k, keys))


def _reference_support(own, other, depth=3):
    """`adaptive.support` as first written."""
    head = list(own[:depth])
    if not head:
        return 0.0
    position = {row: i for i, row in enumerate(other, start=1)}
    discounts = [1.0 / math.log2(i + 1) for i in range(1, len(head) + 1)]
    got = sum(
        d * (1.0 / math.log2(position[row] + 1) if row in position else 0.0)
        for d, row in zip(discounts, head)
    )
    return got / sum(discounts)


def test_support_is_the_first_formula_with_rows_twice_and_any_depth():
    rng = np.random.default_rng(17)
    for case in range(500):
        own = rng.integers(0, 12, int(rng.integers(0, 8))).tolist()
        other = rng.integers(0, 12, int(rng.integers(0, 15))).tolist()
        depth = int(rng.integers(1, 6))
        expected = _reference_support(own, other, depth)
        assert support(own, other, depth).hex() == expected.hex(), case
        assert support(own, other).hex() == _reference_support(own, other).hex(), case
