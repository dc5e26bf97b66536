"""Pure pieces of expansion and merging: LLM variant parsing, RM3 weights, weighted BM25,
the variant merge and the multi-hop decision parser."""

from __future__ import annotations

import pytest

import ragloom
from ragloom.expansion.llm import parse_variants
from ragloom.expansion.rm3 import PRFParams, relevance_model, rm3_query
from ragloom.lexical.bm25 import BM25Params, bm25_idf
from ragloom.retrieval.hops import parse_decision
from ragloom.retrieval.pipeline import Candidate
from ragloom.retrieval.variants import merge_variants
from ragloom.store.base import LexicalQuery

Q = "how do I persist models"


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ('{"queries": ["save SwiftData", "Core Data"]}', ["save SwiftData", "Core Data"]),
        ('Sure:\n```json\n["a", "b", "c", "d", "e", "f"]\n```', ["a", "b", "c", "d"]),
        ("Some:\n1. save models\n2) store it\n- persist", ["save models", "store it", "persist"]),
        ('{"variants": [{"query": "x y"}, " x  y ", "HOW do I persist models", 7, ""]}', ["x y"]),
        ('{"rewrites": ["one"], "note": "fine"}', ["one"]),
    ],
)  # fmt: skip
def test_parse_variants(reply, expected):
    assert parse_variants(reply, Q, max_variants=5) == [Q, *expected]


@pytest.mark.parametrize("reply", ["nothing useful", '{"queries": []}', f'["{Q}"]', "{}"])
def test_parse_variants_refuses(reply):
    with pytest.raises(ValueError):
        parse_variants(reply, Q)


def test_relevance_model_by_hand():
    feedback = [(2.0, {"key": 2, "silver": 1, "the": 1}), (1.0, {"gate": 1, "key": 1})]
    df = {"key": 1, "silver": 1, "the": 50, "gate": 1}
    params = PRFParams(fb_terms=2, max_df_ratio=0.1)
    model = relevance_model(feedback, df, 100, params)
    # key: 2/4*2 + 1/2*1 = 1.5; silver: 1/4*2 = 0.5; gate: 1/2*1 = 0.5; "the" is too common
    assert model == pytest.approx({"key": 1.5 / 2.0, "gate": 0.5 / 2.0})  # ties: by term
    mixed = rm3_query(["silver", "silver", "door"], feedback, df, 100, params)
    assert mixed == pytest.approx(
        {"silver": 0.5 * 2 / 3, "door": 0.5 / 3, "key": 0.5 * 0.75, "gate": 0.5 * 0.25}
    )
    assert sum(mixed.values()) == pytest.approx(1.0)


def test_weighted_lexical_equals_a_direct_computation(tmp_path):
    texts = ["silver key", "silver silver gate", "key key key door", "gate", "river"]
    with ragloom.Index(tmp_path / "w.db", embedder=None) as index:
        index.add([ragloom.Document(f"d{i}", t) for i, t in enumerate(texts)])
        with index.store.snapshot() as snap:
            reader = snap.collection("default")
            weights = {"silver": 0.7, "key": 0.2, "gate": 0.1}
            query = LexicalQuery(list(weights), BM25Params(), weights=list(weights.values()))
            rows, scores = reader.lexical(query, 10)
            df, n = reader.document_frequencies(["silver", "key", "gate", "nope"])
            chunks = snap.chunks(rows.tolist())
    assert df == {"silver": 2, "key": 2, "gate": 2} and n == 5
    lengths = [len(t.split()) for t in texts]
    avgdl = sum(lengths) / len(lengths)
    expected = {}
    for i, text in enumerate(texts):
        words = text.split()
        total = 0.0
        for term, weight in weights.items():
            tf = words.count(term)
            norm = 0.9 * (1 - 0.4 + 0.4 * lengths[i] / avgdl)
            total += weight * bm25_idf(2, 5) * tf * 1.9 / (tf + norm) if tf else 0.0
        if total > 0:
            expected[text] = total
    got = {chunks[r].text: s for r, s in zip(rows.tolist(), scores.tolist())}
    assert got == pytest.approx(expected)
    assert list(scores) == sorted(scores, reverse=True)


def _cands(rows_scores):
    return [
        Candidate(row, score, "lexical", rank, score)
        for rank, (row, score) in enumerate(rows_scores, 1)
    ]


def test_merge_variants_rrf_and_best():
    first = _cands([(1, 9.0), (2, 5.0), (3, 1.0)])
    second = _cands([(3, 4.0), (4, 3.0)])
    rrf = merge_variants([first, second], "rrf", k=60)
    assert [c.row_id for c in rrf] == [3, 1, 2, 4]  # 3: 1/63 + 1/61; 2 and 4 tie at 1/62
    assert rrf[0].score == pytest.approx(1 / 63 + 1 / 61)
    assert rrf[0].variants == ((0, 3), (1, 1))
    assert rrf[0].lexical_rank == 1 and rrf[0].lexical_score == 4.0  # its best variant's legs
    best = merge_variants([first, second], "best")
    assert [(c.row_id, c.score) for c in best] == [(1, 9.0), (2, 5.0), (3, 4.0), (4, 3.0)]
    with pytest.raises(ragloom.InputError):
        merge_variants([first], "sum")


@pytest.mark.parametrize(
    ("reply", "decision"),
    [
        ('{"sufficient": true}', (True, "")),
        ('```json\n{"sufficient": false, "follow_up_query": "  drowned   city "}\n```', (False, "drowned city")),  # noqa: E501
        ('I think {"sufficient": "false", "follow_up_query": "x"} is right', (False, "x")),
    ],
)  # fmt: skip
def test_parse_decision(reply, decision):
    assert parse_decision(reply) == decision


@pytest.mark.parametrize(
    "reply",
    [
        '{"sufficient": "maybe"}',
        "yes",
        '{"follow_up_query": "x"}',
        '{"sufficient": false, "follow_up_query": 3}',
    ],
)
def test_parse_decision_refuses(reply):
    with pytest.raises(ValueError):
        parse_decision(reply)


def test_prf_parameters_are_checked():
    for bad in ({"fb_docs": 0}, {"fb_terms": True}, {"original_weight": 1.5}, {"max_df_ratio": 0}):
        with pytest.raises(ragloom.InputError):
            PRFParams(**bad)
