"""Adaptive fusion and probes as pure functions."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ragloom.errors import InputError
from ragloom.lexical import BM25Params, bm25_ceiling, bm25_idf, bm25_weights
from ragloom.retrieval.adaptive import (
    BOUNDS,
    collection_dense_weight,
    dense_shares,
    lexical_shares,
    query_weights,
    support,
)
from ragloom.retrieval.fusion import fuse
from ragloom.retrieval.probes import cut_probe, probe_order, reciprocal_rank, rest_bm25


def legs(lex: dict[int, float], dense: dict[int, float]):
    """The two legs' answers: row ids and scores, best first."""
    return (
        (np.array(list(lex), np.int64), np.array(list(lex.values()), np.float64)),
        (np.array(list(dense), np.int64), np.array(list(dense.values()), np.float64)),
    )


def test_collection_weight_follows_the_probes_cubed_and_stays_in_bounds():
    assert collection_dense_weight(None) == (0.5, "no profile")
    assert collection_dense_weight({"probes": 3}) == (0.5, "no profile")
    weight, basis = collection_dense_weight({"lexical_mrr": 0.34, "dense_mrr": 0.54})
    assert basis == "probes" and weight == pytest.approx(0.54**3 / (0.54**3 + 0.34**3))
    assert collection_dense_weight({"lexical_mrr": 0.9, "dense_mrr": 0.9})[0] == 0.5
    assert collection_dense_weight({"lexical_mrr": 0.0, "dense_mrr": 0.6})[0] == BOUNDS[1]
    assert collection_dense_weight({"lexical_mrr": 0.6, "dense_mrr": 0.01})[0] == BOUNDS[0]


def test_support_is_how_high_the_other_leg_ranks_a_legs_best_hits():
    same = support([1, 2, 3], [1, 2, 3])
    discounts = [1 / math.log2(i + 1) for i in (1, 2, 3)]
    want = sum(d / math.log2(r + 1) for d, r in zip(discounts, (1, 2, 3))) / sum(discounts)
    assert same == pytest.approx(want)
    assert support([7, 8, 9], [1, 2, 3]) == 0.0  # none of them in the other leg
    assert support([], [1, 2]) == 0.0
    assert support([3], [1, 2, 3]) == pytest.approx(1 / math.log2(4))


def test_query_weights_move_towards_the_leg_the_other_confirms():
    profile = {"lexical_mrr": 0.5, "dense_mrr": 0.5}
    # the dense leg's best hits are the lexical leg's too; the lexical leg's are not dense's
    chosen = query_weights([10, 11, 12], [1, 2, 3], profile)
    assert chosen.lexical + chosen.dense == pytest.approx(1.0)
    assert chosen.dense == pytest.approx(0.5)  # neither confirms the other: no shift
    chosen = query_weights([10, 11, 12, 1], [1, 2, 3], profile)  # lexical holds dense's best
    assert (
        chosen.lexical_support == 0.0
        and chosen.dense > 0.5
        and chosen.dense_support > chosen.lexical_support
    )
    assert chosen.basis == "probes" and chosen.collection_dense == 0.5
    caller = query_weights([10, 1], [1, 2], profile, {"lexical": 3.0, "dense": 1.0})
    assert (caller.lexical, caller.dense, caller.basis) == (0.75, 0.25, "caller")


def test_shares_are_on_absolute_scales():
    assert lexical_shares(np.array([6.0, 3.0]), 12.0).tolist() == [0.5, 0.25]
    assert lexical_shares(np.array([6.0, 3.0]), None).tolist() == [1.0, 0.5]
    assert lexical_shares(np.array([13.0]), 12.0).tolist() == [1.0]  # never above 1
    assert dense_shares(np.array([0.7, -0.2])).tolist() == [0.7, 0.0]


def test_adaptive_score_is_the_weighted_mean_of_the_shares():
    given = legs({1: 6.0, 2: 3.0}, {2: 0.8, 3: 0.4})
    fused, _ = fuse(*given, ceiling=12.0)
    by_row = {c.row_id: c for c in fused}
    weights = by_row[1].fusion_detail
    assert weights.lexical + weights.dense == pytest.approx(1.0)
    # row 1 is missing from the dense leg: counted at that leg's lowest candidate (0.4)
    assert by_row[1].score == pytest.approx(weights.lexical * 0.5 + weights.dense * 0.4)
    assert by_row[2].score == pytest.approx(weights.lexical * 0.25 + weights.dense * 0.8)
    # row 3 is missing from the lexical leg: its lowest share (0.25)
    assert by_row[3].score == pytest.approx(weights.lexical * 0.25 + weights.dense * 0.4)
    assert [c.row_id for c in fused] == sorted(by_row, key=lambda r: -by_row[r].score)
    assert all(0.0 <= c.score <= 1.0 for c in fused)
    assert (by_row[2].lexical_score, by_row[2].dense_score) == (3.0, pytest.approx(0.8))
    assert by_row[1].fused_by == "adaptive" and by_row[1].fusion_detail.ceiling == 12.0


def test_a_lone_hit_scores_its_shares_not_zero():
    given = legs({5: 4.0}, {5: 0.6})
    (only,), _ = fuse(*given, ceiling=10.0)
    weights = only.fusion_detail
    assert only.score == pytest.approx(weights.lexical * 0.4 + weights.dense * 0.6)
    assert only.score > 0
    (lexical_only,), _ = fuse(*legs({5: 4.0}, {}), ceiling=10.0)
    assert lexical_only.score > 0


def test_metadata_weight_keeps_the_score_within_one():
    given = legs({1: 10.0}, {1: 1.0})
    (hit,), _ = fuse(*given, ceiling=10.0, weights={"metadata": 1.0}, preferences={1: 1.0})
    assert hit.score == pytest.approx(1.0) and hit.metadata_score == 1.0
    with pytest.raises(InputError, match="unknown leg"):
        fuse(*given, weights={"sparse": 1.0})


def test_weighted_zscore_scores_are_never_negative_and_a_lone_hit_is_one_half():
    fused, _ = fuse(*legs({1: 9.0, 2: 1.0, 3: 0.5}, {4: 0.9, 5: 0.1}), method="weighted")
    assert min(c.score for c in fused) > 0.0
    (lone,), _ = fuse(*legs({1: 9.0}, {1: 0.9}), method="weighted")
    assert lone.score == pytest.approx(0.5)


def test_the_ceiling_bounds_every_bm25_score():
    params = BM25Params()
    idfs = [bm25_idf(3, 100), bm25_idf(40, 100)]
    ceiling = bm25_ceiling(idfs, params)
    for tf in (1, 5, 500):
        for length in (1.0, 50.0, 5000.0):
            score = sum(
                float(bm25_weights(np.array([tf]), np.array([length]), i, 20.0, params)[0])
                for i in idfs
            )
            assert score < ceiling


def test_probes_are_cut_from_docstrings_titles_sentences_and_first_words():
    code = 'def paste(x):\n    """Returns the system clipboard contents as text."""\n' + (
        "    selection = 'primary' if x else 'clipboard'\n"
        "    out = subprocess.run(['xclip', '-selection', selection, '-o'], capture_output=True)\n"
        "    return out.stdout.decode('utf-8')\n"
    )
    query, rest = cut_probe(None, code)
    assert query == "Returns the system clipboard contents as text."
    assert "xclip" in rest and "clipboard contents" not in rest
    text = (
        "experimental study of a wing . " + "the lift of a wing in a slipstream was measured " * 2
    )
    assert cut_probe("experimental study of a wing .", text)[0] == "experimental study of a wing ."
    assert not cut_probe("experimental study of a wing .", text)[1].startswith("experimental")
    prose = "First sentence here is short. " + "Second one follows it closely. " * 3
    assert cut_probe(None, prose)[0] == "First sentence here is short."
    words = " ".join(f"w{i}" for i in range(30))
    assert cut_probe(None, words) == (" ".join(f"w{i}" for i in range(10)), words[30:].strip())
    assert cut_probe(None, "too short to probe") is None
    assert cut_probe("a b", "x " * 40) is not None  # a two-word title: cut from the text


def test_probe_order_is_fixed_by_the_keys_alone():
    keys = {1: "a#0", 2: "b#0", 3: "c#0", 4: "c#1"}
    assert probe_order(keys) == probe_order(dict(reversed(list(keys.items()))))
    assert probe_order({10 + r: k for r, k in keys.items()}) == [10 + r for r in probe_order(keys)]


def test_rest_bm25_and_reciprocal_rank():
    params = BM25Params()
    score = rest_bm25(
        ["key", "gate"], ["key", "key", "door"], {"key": 2, "gate": 5}, 10, 4.0, params
    )
    idf = bm25_idf(2, 10)
    want = float(bm25_weights(np.array([2.0]), np.array([3.0]), idf, 4.0, params)[0])
    assert score == pytest.approx(want)  # "gate" is not in the rest
    assert rest_bm25(["gate"], ["gate"], {"gate": 0}, 10, 4.0, params) == 0.0
    rows, scores = np.array([7, 3, 9]), np.array([5.0, 4.0, 1.0])
    assert reciprocal_rank(4.5, 3, rows, scores) == pytest.approx(1 / 2)  # 7 is ahead
    assert reciprocal_rank(9.0, 3, rows, scores) == 1.0
    assert reciprocal_rank(0.0, 3, rows, scores) == 0.0
