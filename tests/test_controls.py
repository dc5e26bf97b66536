"""Boosts, caps and MMR as pure functions over candidates."""

from __future__ import annotations

import numpy as np
import pytest

from ragloom.errors import InputError
from ragloom.retrieval.controls import (
    BoostRule,
    apply_boosts,
    cap_per_key,
    maximal_marginal_relevance,
)
from ragloom.retrieval.pipeline import Candidate
from ragloom.retrieval.search_options import SearchOptions, parse_diversity

META = {
    1: {"chapter_num": 9, "scholar_id": "calvin", "tradition": "reformed"},
    2: {"chapter_num": 8, "scholar_id": "calvin", "tradition": "reformed"},
    3: {"chapter_num": 9, "scholar_id": "aquinas", "tradition": "catholic"},
    4: {"chapter_num": 3, "scholar_id": "calvin", "tradition": "reformed"},
    5: {"chapter_num": 9, "scholar_id": "luther", "tradition": "lutheran"},
}
STUDY_BOOSTS = [
    {"when": {"chapter_num": 9}, "factor": 1.5, "label": "current chapter"},
    {"when": {"scholar_id": {"$in": ["calvin"]}}, "factor": 1.1, "label": "preferred scholar"},
    {"when": {"tradition": "reformed"}, "factor": 1.05, "label": "preferred tradition"},
]


def cands(scores: dict[int, float]) -> list[Candidate]:
    return [Candidate(row, s, "lexical", fused_score=s) for row, s in scores.items()]


def test_boost_math_is_exact_and_only_where_rules_match():
    rules = [BoostRule.parse(b) for b in STUDY_BOOSTS]
    out = apply_boosts(cands({1: 1.0, 2: 1.0, 3: 1.0, 4: 0.5, 5: 0.9}), rules, META)
    by_row = {c.row_id: c for c in out}
    assert by_row[1].score == pytest.approx(1.0 * 1.5 * 1.1 * 1.05)
    assert by_row[2].score == pytest.approx(1.0 * 1.1 * 1.05)
    assert by_row[3].score == pytest.approx(1.5)
    assert by_row[4].score == pytest.approx(0.5 * 1.1 * 1.05)
    assert by_row[5].score == pytest.approx(0.9 * 1.5)
    assert [label for label, _ in by_row[1].boosts] == [
        "current chapter",
        "preferred scholar",
        "preferred tradition",
    ]
    assert by_row[3].boosts == (("current chapter", 1.5),)
    assert by_row[1].fused_score == 1.0  # the pre-boost score stays visible
    assert [c.row_id for c in out] == [1, 3, 5, 2, 4]


def test_equal_boosts_never_invert_order():
    rules = [BoostRule.parse(b) for b in STUDY_BOOSTS]
    # rows 1 and 3... all chapter 9 rows get at least 1.5: among rows with the SAME boosts
    # the original order must hold
    scores = {1: 0.9, 2: 0.8, 4: 0.7}  # all calvin/reformed, boosts differ only by chapter
    out = apply_boosts(cands(scores), rules, META)
    same = [c for c in out if c.row_id in (2, 4)]  # identical boosts (1.1 * 1.05)
    assert [c.row_id for c in same] == [2, 4]


def test_cap_per_key_keeps_the_best_two_per_scholar():
    out = cap_per_key(cands({1: 5, 2: 4, 3: 3.5, 4: 3, 5: 2}), {"scholar_id": 2}, META)
    assert [c.row_id for c in out] == [1, 2, 3, 5]
    assert out[1].diversity == ("scholar_id='calvin': #2 of 2",)


# Study app: four commentary chunks by two scholars, four without a scholar (word studies,
# FAQ), interleaved by score. A cap of 2 per scholar must not touch the scholar-less ones.
STUDY = {
    10: ({"scholar_id": "calvin"}, 0.50),
    11: ({"source_type": "word_study"}, 0.45),
    12: ({"scholar_id": "calvin"}, 0.40),
    13: ({"source_type": "faq", "scholar_id": None}, 0.35),
    14: ({"scholar_id": "calvin"}, 0.30),
    15: ({"source_type": "word_study"}, 0.2626),
    16: ({"source_type": "faq"}, 0.20),
    17: ({"scholar_id": "moo"}, 0.1633),
}


def study_cands() -> list[Candidate]:
    return cands({row: score for row, (_, score) in STUDY.items()})


STUDY_META = {row: fields for row, (fields, _) in STUDY.items()}


def test_cap_per_key_never_caps_hits_without_the_key():
    out = cap_per_key(study_cands(), {"scholar_id": 2}, STUDY_META)
    assert [c.row_id for c in out] == [10, 11, 12, 13, 15, 16, 17]  # only calvin's third goes
    assert out[1].diversity == ()  # nothing was counted for the scholar-less chunk


def test_cap_per_key_can_group_hits_without_the_key():
    out = cap_per_key(study_cands(), {"scholar_id": 2}, STUDY_META, missing="group")
    assert [c.row_id for c in out] == [10, 11, 12, 13, 17]
    assert out[3].diversity == ("scholar_id=None: #2 of 2",)


def test_search_options_carry_the_missing_policy():
    assert SearchOptions(diversity={"max_per": {"scholar_id": 2}}).cap_missing == "keep"
    grouped = SearchOptions(diversity={"max_per": {"scholar_id": 2}, "missing": "group"})
    assert grouped.cap_missing == "group"


def test_mmr_prefers_novel_candidates():
    vectors = np.array([[1.0, 0.0], [0.999, 0.0447], [0.0, 1.0]], np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    picked = maximal_marginal_relevance(cands({1: 1.0, 2: 0.95, 3: 0.6}), vectors, 2, 0.5)
    assert [c.row_id for c in picked] == [1, 3]
    relevance_only = maximal_marginal_relevance(cands({1: 1.0, 2: 0.95, 3: 0.6}), vectors, 2, 1.0)
    assert [c.row_id for c in relevance_only] == [1, 2]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"factor": 2}, "'when' and 'factor'"),
        ({"when": {"a": 1}, "factor": 0}, "positive number"),
        ({"when": {"a": 1}, "factor": "big"}, "positive number"),
        ({"when": {"a": {"$bad": 1}}, "factor": 2}, "unknown filter operator"),
        ({"when": {"a": 1}, "factor": 2, "extra": 1}, "unknown boost field"),
    ],
)
def test_bad_boosts(spec, message):
    with pytest.raises(InputError, match=message):
        BoostRule.parse(spec)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"max_per": {"scholar_id": 0}}, "positive integer"),
        ({"mmr": {"lambda": 2}}, "between 0 and 1"),
        ({"shuffle": True}, "unknown diversity control"),
        ({"max_per": {"scholar_id": 2}, "missing": "drop"}, "keep, group"),
        ("max 2", "must be an object"),
    ],
)
def test_bad_diversity(spec, message):
    with pytest.raises(InputError, match=message):
        parse_diversity(spec)


def test_options_parse_everything_up_front():
    options = SearchOptions(
        filters={"book_id": "romans"},
        boosts=STUDY_BOOSTS,
        diversity={"max_per": {"scholar_id": 2}, "mmr": 0.6},
    )
    assert options.predicate({"book_id": "romans"}) and len(options.boost_rules) == 3
    assert options.caps == {"scholar_id": 2} and options.mmr_lambda == 0.6 and options.reorders
