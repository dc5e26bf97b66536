"""Options built from plain keywords are built once and reused (a search's options are
validated in about 25 us warm and 75 us with cold caches, a third of a rare-term query):
the reuse must never let a value of another type, or an invalid one, through."""

from __future__ import annotations

import pytest

from ragloom.engine.options import search_options
from ragloom.errors import InvalidRequest


def test_plain_keywords_give_the_same_options_object() -> None:
    first = search_options(10, mode="lexical", rrf_k=30.0)
    assert search_options(10, mode="lexical", rrf_k=30.0) is first
    assert search_options(10, rrf_k=30.0, mode="lexical") is first  # keyword order aside
    assert search_options(11, mode="lexical", rrf_k=30.0) is not first
    assert search_options(11, mode="lexical", rrf_k=30.0).top_k == 11


def test_equal_values_of_another_type_are_checked_afresh() -> None:
    assert search_options(1).top_k == 1
    for bad in (True, 1.0):  # equal to 1 and hashed alike, but not a JSON integer
        with pytest.raises(InvalidRequest, match="top_k must be a JSON integer"):
            search_options(bad)
    assert search_options(5, candidates=40).candidates == 40
    with pytest.raises(InvalidRequest):
        search_options(5, candidates=40.0)


def test_invalid_options_raise_every_time() -> None:
    for _ in range(2):
        with pytest.raises(InvalidRequest, match="unknown mode"):
            search_options(5, mode="sideways")


def test_options_with_mappings_are_built_each_time() -> None:
    a = search_options(5, filters={"lang": "en"})
    b = search_options(5, filters={"lang": "en"})
    assert a is not b and a.filters == b.filters
    assert a.predicate is not None and a.predicate({"lang": "en"})
