"""Fusion and thresholds as pure functions."""

from __future__ import annotations

import numpy as np
import pytest

from ragloom.errors import InputError
from ragloom.retrieval.fusion import (
    normal_cdf,
    normalize,
    reciprocal_rank_fusion,
    weighted_fusion,
)
from ragloom.retrieval.pipeline import DENSE, LEXICAL, drop_weak_dense_only, leg_candidates


def legs(lex: dict[int, float], dense: dict[int, float]):
    return {
        LEXICAL: leg_candidates(LEXICAL, np.array(list(lex)), np.array(list(lex.values()))),
        DENSE: leg_candidates(DENSE, np.array(list(dense)), np.array(list(dense.values()))),
    }


def test_rrf_sums_reciprocal_ranks_and_tags_matches():
    fused = reciprocal_rank_fusion(legs({1: 9.0, 2: 5.0}, {2: 0.9, 3: 0.8}), k=60)
    by_row = {c.row_id: c for c in fused}
    assert by_row[2].score == pytest.approx(1 / 62 + 1 / 61)
    assert by_row[1].score == pytest.approx(1 / 61)
    assert by_row[3].score == pytest.approx(1 / 62)
    assert [c.row_id for c in fused] == [2, 1, 3]
    assert (by_row[1].match, by_row[2].match, by_row[3].match) == ("lexical", "both", "dense")
    assert (by_row[2].lexical_rank, by_row[2].dense_rank) == (2, 1)
    assert by_row[2].lexical_score == 5.0 and by_row[2].dense_score == pytest.approx(0.9)
    assert by_row[2].fused_score == by_row[2].score


def test_rrf_weights_are_honoured():
    fused = reciprocal_rank_fusion(legs({1: 9.0}, {2: 0.9}), k=60, weights={"dense": 2.0})
    assert [c.row_id for c in fused] == [2, 1]
    assert fused[0].score == pytest.approx(2 / 61)


def test_weighted_minmax_fusion_math():
    fused = weighted_fusion(
        legs({1: 10.0, 2: 6.0, 3: 2.0}, {3: 0.9, 4: 0.5}),
        weights={"lexical": 0.3, "dense": 0.7},
        normalization="minmax",
    )
    by_row = {c.row_id: c.score for c in fused}
    assert by_row[1] == pytest.approx(0.3 * 1.0)
    assert by_row[2] == pytest.approx(0.3 * 0.5)
    assert by_row[3] == pytest.approx(0.3 * 0.0 + 0.7 * 1.0)
    assert by_row[4] == pytest.approx(0.7 * 0.0)
    assert [c.row_id for c in fused][0] == 3


def test_weighted_zscore_uses_leg_minimum_for_missing_rows():
    fused = weighted_fusion(
        legs({1: 3.0, 2: 1.0}, {2: 0.8, 3: 0.4}),
        weights={"lexical": 0.5, "dense": 0.5},
        normalization="zscore",
    )
    by_row = {c.row_id: c.score for c in fused}
    # each leg's z-scores are +1 / -1; a row missing from a leg gets that leg's minimum (-1);
    # the weighted sum is reported through the normal CDF, so no score is negative
    sums = {1: 0.5 * 1 + 0.5 * -1, 2: 0.5 * -1 + 0.5 * 1, 3: -1.0}
    assert by_row == pytest.approx({row: normal_cdf(total) for row, total in sums.items()})
    assert by_row[3] == pytest.approx(0.158655, abs=1e-6) and min(by_row.values()) > 0


def test_normalize_edge_cases():
    assert normalize(np.array([2.0, 2.0])).tolist() == [1.0, 1.0]
    assert normalize(np.array([2.0, 2.0]), "zscore").tolist() == [0.0, 0.0]
    assert normalize(np.array([])).tolist() == []
    with pytest.raises(InputError, match="normalization"):
        normalize(np.array([1.0]), "softmax")


def test_bad_weights_are_errors():
    with pytest.raises(InputError, match="unknown leg"):
        reciprocal_rank_fusion(legs({1: 1.0}, {}), weights={"sparse": 1.0})
    with pytest.raises(InputError, match="non-negative"):
        weighted_fusion(legs({1: 1.0}, {}), weights={"dense": -1})


def test_weak_dense_only_hits_are_dropped_but_lexical_ones_stay():
    fused = reciprocal_rank_fusion(legs({1: 0.1}, {1: 0.2, 2: 0.44, 3: 0.46}))
    kept = {c.row_id for c in drop_weak_dense_only(fused, 0.45)}
    assert kept == {1, 3}  # 1 is "both" (lexical always passes), 2 is dense-only and weak
