"""Metrics checked by hand and against trec_eval (through pytrec_eval) on random runs."""

from __future__ import annotations

import math
import random

import pytest
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st

from ragloom.errors import InputError
from ragloom.evaluation.metrics import evaluate_run, mrr_at_k, ndcg_at_k, recall_at_k

CUTOFFS = (1, 3, 5, 10, 100)


# --- hand-computed cases -------------------------------------------------------------------


def test_perfect_ranking_scores_one() -> None:
    judgments = {"a": 3, "b": 2, "c": 1, "n": 0}
    ranked = ["a", "b", "c", "n", "x"]
    assert ndcg_at_k(ranked, judgments, 10) == pytest.approx(1.0)
    assert recall_at_k(ranked, judgments, 100) == 1.0
    assert mrr_at_k(ranked, judgments, 10) == 1.0


def test_nothing_relevant_retrieved_scores_zero() -> None:
    judgments = {"a": 2, "b": 1, "n": 0}
    ranked = ["n", "x", "y"]  # a judged-not-relevant doc and unjudged docs only
    assert ndcg_at_k(ranked, judgments, 10) == 0.0
    assert recall_at_k(ranked, judgments, 100) == 0.0
    assert mrr_at_k(ranked, judgments, 10) == 0.0
    assert ndcg_at_k([], judgments, 10) == 0.0


def test_graded_example_by_hand() -> None:
    # judgments: a=3, b=2, d=1 relevant; c=0 judged not relevant. Ranking: c, b, a, x.
    # DCG@10  = 0/log2(2) + 2/log2(3) + 3/log2(4) + 0     = 1.261860 + 1.5             = 2.761860
    # IDCG@10 = 3/log2(2) + 2/log2(3) + 1/log2(4)         = 3 + 1.261860 + 0.5         = 4.761860
    # nDCG@10 = 2.761860 / 4.761860 = 0.579996
    # Recall@2 = 1/3 (b of a, b, d); Recall@3 = 2/3; Recall@100 = 2/3 (d never retrieved)
    # MRR@10 = 1/2 (first relevant, b, at rank 2); MRR@1 = 0
    judgments = {"a": 3, "b": 2, "c": 0, "d": 1}
    ranked = ["c", "b", "a", "x"]
    expected = (2 / math.log2(3) + 3 / 2) / (3 + 2 / math.log2(3) + 1 / 2)
    assert ndcg_at_k(ranked, judgments, 10) == pytest.approx(expected, abs=1e-12)
    assert ndcg_at_k(ranked, judgments, 10) == pytest.approx(0.579996, abs=1e-6)
    assert recall_at_k(ranked, judgments, 2) == pytest.approx(1 / 3)
    assert recall_at_k(ranked, judgments, 3) == pytest.approx(2 / 3)
    assert recall_at_k(ranked, judgments, 100) == pytest.approx(2 / 3)
    assert mrr_at_k(ranked, judgments, 10) == 0.5
    assert mrr_at_k(ranked, judgments, 1) == 0.0


def test_ndcg_ideal_is_cut_at_k() -> None:
    # @1 the ideal is just the grade-3 doc: retrieving the grade-2 doc first gives 2/3.
    judgments = {"a": 3, "b": 2}
    assert ndcg_at_k(["a"], judgments, 1) == pytest.approx(1.0)
    assert ndcg_at_k(["b", "a"], judgments, 1) == pytest.approx(2 / 3)


def test_evaluate_run_averages_judged_queries_and_zeroes_missing_ones() -> None:
    qrels = {
        "q1": {"a": 1},  # perfect
        "q2": {"b": 1},  # missing from the run: counts as 0
        "q3": {"c": 0},  # no relevant doc: not averaged over
        "q4": {},  # no judgments at all: not averaged over
    }
    run = {"q1": ["a"], "q3": ["c"], "q5": ["z"]}  # q5 is not judged: ignored
    result = evaluate_run(run, qrels)
    assert result == {"ndcg@10": 0.5, "recall@100": 0.5, "mrr@10": 0.5, "queries": 2}


def test_evaluate_run_keys_follow_cutoffs() -> None:
    result = evaluate_run({"q": ["x", "a"]}, {"q": {"a": 1}}, k_ndcg=5, k_recall=1, k_mrr=3)
    assert set(result) == {"ndcg@5", "recall@1", "mrr@3", "queries"}
    assert result["recall@1"] == 0.0
    assert result["mrr@3"] == 0.5


def test_evaluate_run_without_relevant_docs_is_an_error() -> None:
    with pytest.raises(InputError, match="no query"):
        evaluate_run({"q": ["a"]}, {"q": {"a": 0}})


@pytest.mark.parametrize("k", [0, -1, 2.5, True])
def test_bad_cutoff_is_an_error(k: object) -> None:
    with pytest.raises(InputError, match="cut-off"):
        ndcg_at_k(["a"], {"a": 1}, k)  # type: ignore[arg-type]


def test_repeated_doc_is_an_error() -> None:
    with pytest.raises(InputError, match="repeats"):
        recall_at_k(["a", "a"], {"a": 1}, 10)


# --- agreement with trec_eval ----------------------------------------------------------------


def _pytrec_run(run: dict[str, list[str]]) -> dict[str, dict[str, float]]:
    """Strictly decreasing distinct scores, so trec_eval's tie-breaking never applies."""
    return {qid: {d: float(len(r) - i) for i, d in enumerate(r)} for qid, r in run.items() if r}


def _trec_eval(
    run: dict[str, list[str]], qrels: dict[str, dict[str, int]], measures: set[str]
) -> dict[str, dict[str, float]]:
    judged = {qid: j for qid, j in qrels.items() if j}
    return pytrec_eval.RelevanceEvaluator(judged, measures).evaluate(_pytrec_run(run))


def _assert_matches_trec_eval(run: dict[str, list[str]], qrels: dict[str, dict[str, int]]) -> None:
    """Per query and mean, ours equal trec_eval's; queries missing from the run count as 0."""
    cut = ",".join(map(str, CUTOFFS))
    full = _trec_eval(run, qrels, {f"ndcg_cut.{cut}", f"recall.{cut}"})
    top10 = _trec_eval({q: r[:10] for q, r in run.items()}, qrels, {"recip_rank"})
    judged = [q for q, j in qrels.items() if any(g > 0 for g in j.values())]
    for qid in judged:
        ranked, judgments = run.get(qid, []), qrels[qid]
        for k in CUTOFFS:
            theirs = full.get(qid, {})
            assert ndcg_at_k(ranked, judgments, k) == pytest.approx(
                theirs.get(f"ndcg_cut_{k}", 0.0), abs=1e-9
            ), (qid, k)
            assert recall_at_k(ranked, judgments, k) == pytest.approx(
                theirs.get(f"recall_{k}", 0.0), abs=1e-9
            ), (qid, k)
        rr = top10.get(qid, {}).get("recip_rank", 0.0)
        assert mrr_at_k(ranked, judgments, 10) == pytest.approx(rr, abs=1e-9), qid

    if not judged:
        return
    ours = evaluate_run(run, qrels)
    assert ours["queries"] == len(judged)

    def mean(result: dict[str, dict[str, float]], measure: str) -> float:
        return sum(result.get(q, {}).get(measure, 0.0) for q in judged) / len(judged)

    assert ours["ndcg@10"] == pytest.approx(mean(full, "ndcg_cut_10"), abs=1e-9)
    assert ours["recall@100"] == pytest.approx(mean(full, "recall_100"), abs=1e-9)
    assert ours["mrr@10"] == pytest.approx(mean(top10, "recip_rank"), abs=1e-9)


def _random_case(seed: int) -> tuple[dict[str, list[str]], dict[str, dict[str, int]]]:
    """Random graded qrels and runs over a 400-doc pool, biased to retrieve judged docs."""
    rng = random.Random(seed)
    pool = [f"d{i}" for i in range(400)]
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, list[str]] = {}
    for q in range(40):
        qid = f"q{q}"
        kind = rng.random()
        judged = rng.sample(pool, rng.randint(0, 40))
        if kind < 0.1:
            qrels[qid] = {d: 0 for d in judged}  # judged, but nothing relevant
        elif kind < 0.95:
            qrels[qid] = {d: rng.randint(0, 3) for d in judged}
        # else: query only in the run
        if rng.random() < 0.9:  # 10% of queries are missing from the run
            candidates = list(dict.fromkeys(rng.sample(judged, len(judged) // 2) + pool))
            size = rng.randint(0, 150)
            ranked = rng.sample(candidates[: size + 60], min(size, len(candidates)))
            if rng.random() < 0.5:  # a "decent system": noisy sort by grade
                grades = qrels.get(qid, {})
                ranked.sort(key=lambda d, g=grades: -(g.get(d, 0) + 2 * rng.random()))
            run[qid] = ranked
    return run, qrels


@pytest.mark.parametrize("seed", range(20))
def test_matches_trec_eval_on_random_runs(seed: int) -> None:
    run, qrels = _random_case(seed)
    _assert_matches_trec_eval(run, qrels)


_DOCS = [f"d{i}" for i in range(140)]
_QIDS = [f"q{i}" for i in range(6)]


@settings(max_examples=150, deadline=None)
@given(
    qrels=st.dictionaries(
        st.sampled_from(_QIDS),
        st.dictionaries(st.sampled_from(_DOCS), st.integers(0, 3), max_size=25),
    ),
    run=st.dictionaries(
        st.sampled_from(_QIDS), st.lists(st.sampled_from(_DOCS), unique=True, max_size=130)
    ),
)
def test_matches_trec_eval_hypothesis(
    qrels: dict[str, dict[str, int]], run: dict[str, list[str]]
) -> None:
    _assert_matches_trec_eval(run, qrels)
