"""Options built from plain keywords, or from mappings and lists of them (filters, boosts),
are built once and reused (a search's options are validated in about 25 us warm and 75 us
with cold caches, a third of a rare-term query; with a one-key filter 45 us): the reuse must
never let a value of another type, an invalid one or a caller's later change through."""

from __future__ import annotations

import pytest

from ragloom.engine.keywords import search_options
from ragloom.errors import InputError, InvalidRequest


def test_plain_keywords_give_the_same_options_object() -> None:
    first = search_options(10, mode="lexical", rrf_k=30.0)
    assert search_options(10, mode="lexical", rrf_k=30.0) is first
    assert search_options(10, rrf_k=30.0, mode="lexical") is first  # keyword order aside
    assert search_options(11, mode="lexical", rrf_k=30.0) is not first
    assert search_options(11, mode="lexical", rrf_k=30.0).top_k == 11


def test_equal_values_of_another_type_are_checked_afresh() -> None:
    assert search_options(1).top_k == 1
    with pytest.raises(InvalidRequest, match="top_k must be a JSON integer"):
        search_options(True)  # equal to 1 and hashed alike, but not a JSON integer
    # 1.0 is an integer to JSON Schema: taken as 1 (an int), in options of its own
    assert type(search_options(1.0).top_k) is int and search_options(1.0).top_k == 1
    with pytest.raises(InvalidRequest, match="top_k must be a JSON integer"):
        search_options(1.5)
    assert search_options(5, candidates=40).candidates == 40
    assert type(search_options(5, candidates=40.0).candidates) is int
    with pytest.raises(InvalidRequest):
        search_options(5, candidates=40.5)


def test_invalid_options_raise_every_time() -> None:
    for _ in range(2):
        with pytest.raises(InvalidRequest, match="unknown mode"):
            search_options(5, mode="sideways")


def test_options_with_mappings_are_reused_for_the_same_content() -> None:
    a = search_options(5, filters={"lang": "en", "year": {"$gte": 2020}}, mode="hybrid")
    b = search_options(5, mode="hybrid", filters={"lang": "en", "year": {"$gte": 2020}})
    assert b is a
    assert a.predicate is not None and a.predicate({"lang": "en", "year": 2021})
    assert not a.predicate({"lang": "en", "year": 2019})
    other = search_options(5, filters={"lang": "de", "year": {"$gte": 2020}}, mode="hybrid")
    assert other is not a and not other.predicate({"lang": "en", "year": 2021})


def test_reused_options_equal_options_built_afresh() -> None:
    from ragloom.engine.keywords import _options

    keywords = {
        "filters": {"$or": [{"lang": "en"}, {"tags": {"$in": ["a", "b"]}}]},
        "boosts": [{"when": {"lang": "en"}, "factor": 1.5}],
        "prefer": [{"lang": "en"}],
        "diversity": {"max_per": {"document_id": 2}},
        "weights": {"lexical": 0.7, "dense": 0.3},
        "bm25": {"k1": 1.2},
    }
    cached = search_options(7, **keywords)
    fresh = _options(7, dict(keywords))
    assert cached == fresh
    assert cached.filter_key == fresh.filter_key and cached.caps == fresh.caps
    assert cached.unset == fresh.unset and cached.mmr_lambda == fresh.mmr_lambda
    rules = [[(r.when, r.factor, r.label) for r in o.boost_rules] for o in (cached, fresh)]
    assert rules[0] == rules[1] == [({"lang": "en"}, 1.5, "lang=en")]
    assert cached.predicate({"tags": ["b"]}) and not cached.predicate({"lang": "de"})


def test_a_callers_later_change_to_its_mapping_changes_nothing_reused() -> None:
    filters = {"lang": "en"}
    first = search_options(5, filters=filters)
    filters["lang"] = "de"  # the caller reuses its dict for another search
    second = search_options(5, filters=filters)
    assert first.filters == {"lang": "en"} and first.predicate({"lang": "en"})
    assert second.filters == {"lang": "de"} and second.predicate({"lang": "de"})
    assert first.filters is not filters and second.filters is not filters


def test_values_of_another_type_inside_mappings_are_told_apart() -> None:
    as_int = search_options(5, filters={"n": 1})
    as_bool = search_options(5, filters={"n": True})
    as_float = search_options(5, filters={"n": 1.0})
    assert as_int is not as_bool and as_int is not as_float and as_bool is not as_float
    assert as_bool.filters["n"] is True and type(as_float.filters["n"]) is float
    as_list = search_options(5, filters={"tags": {"$in": ["a"]}})
    assert type(as_list.filters["tags"]["$in"]) is list


def test_invalid_mappings_raise_every_time() -> None:
    for _ in range(2):
        with pytest.raises(InputError, match="unknown filter operator"):
            search_options(5, filters={"n": {"$nope": 1}})


def test_objects_that_are_not_plain_data_are_not_reused() -> None:
    class Reranker:
        name = "mine"

        def rerank(self, query, texts):
            return [0.0 for _ in texts]

    reranker = Reranker()
    a = search_options(5, rerank=reranker, filters={"lang": "en"})
    b = search_options(5, rerank=reranker, filters={"lang": "en"})
    assert a is not b and a.reranker is reranker and a.rerank is True


def test_large_filters_are_built_each_time_and_not_kept() -> None:
    """A filter of many values (an access list of document ids) is not kept: 256 kept options
    of 10,000 ids each would hold a quarter of a GB."""
    ids = [f"doc-{i}" for i in range(1000)]
    a = search_options(5, filters={"doc": {"$in": ids}})
    b = search_options(5, filters={"doc": {"$in": ids}})
    assert a is not b and a == b
    assert a.predicate({"doc": "doc-999"}) and not a.predicate({"doc": "doc-1000"})
    ids.append("doc-1000")  # still a copy of the caller's list
    assert not a.predicate({"doc": "doc-1000"}) and len(a.filters["doc"]["$in"]) == 1000
