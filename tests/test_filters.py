"""Metadata filters as pure predicates."""

from __future__ import annotations

import pytest

from ragloom.errors import InputError
from ragloom.filters import compile_filter, version_key

ROMANS_9 = {
    "book_id": "romans",
    "chapter_num": 9,
    "scholar_id": "calvin",
    "tags": ["election", "mercy"],
    "deprecated": False,
    "min_os": "17.0",
    "source": {"kind": "commentary"},
}


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"book_id": "romans"}, True),
        ({"book_id": "john"}, False),
        ({"tags": "mercy"}, True),  # a bare value on a list field: membership
        ({"chapter_num": {"$gte": 9}}, True),
        ({"chapter_num": {"$gt": 9}}, False),
        ({"chapter_num": {"$lt": 10, "$gte": 9}}, True),
        ({"chapter_num": {"$ne": 9}}, False),
        ({"scholar_id": {"$in": ["calvin", "luther"]}}, True),
        ({"scholar_id": {"$nin": ["calvin"]}}, False),
        ({"tags": {"$overlap": ["SwiftData", "mercy"]}}, True),
        ({"tags": {"$overlap": ["SwiftData"]}}, False),
        ({"verse": {"$exists": False}}, True),
        ({"chapter_num": {"$exists": True}}, True),
        ({"$not": {"deprecated": True}}, True),
        ({"deprecated": 0}, False),  # booleans are not numbers
        ({"min_os": {"$version_lte": "18.0"}}, True),
        ({"min_os": {"$version_gte": "9.0"}}, True),  # 17 > 9 as versions, not as strings
        ({"min_os": {"$version_gt": "17"}}, False),  # "17.0" == "17"
        ({"min_os": {"$version_eq": "17.0.0"}}, True),
        ({"source.kind": "commentary"}, True),
        ({"$or": [{"book_id": "john"}, {"chapter_num": 9}]}, True),
        ({"$and": [{"book_id": "romans"}, {"chapter_num": 8}]}, False),
        ({"chapter_num": {"$gte": "9"}}, False),  # type mismatch: no match, not an error
        ({}, True),
    ],
)
def test_operators(spec, expected):
    assert compile_filter(spec)(ROMANS_9) is expected


def test_version_ordering_is_numeric():
    assert version_key("9.0") < version_key("18.0") < version_key("18.0.1")
    assert version_key("18") == version_key("18.0.0")
    assert version_key("beta") is None


def test_a_negative_zero_is_version_zero():
    """PostgreSQL's JSON numbers have no negative zero: -0.0 must read as 0 in every store."""
    assert version_key(-0.0) == version_key(0) == version_key("0.0") == (0,)
    assert compile_filter({"x": {"$version_lt": "9"}})({"x": -0.0}) is True


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"a": {"$regex": "x"}}, "unknown filter operator '\\$regex'"),
        ({"$xor": []}, "unknown filter operator"),
        ({"a": {"$in": "notalist"}}, "needs a list"),
        ({"a": {"$gt": [1]}}, "number or a string"),
        ({"a": {"$exists": "yes"}}, "true or false"),
        ({"a": {"$version_gte": "eighteen"}}, "dotted version"),
        ({"$or": []}, "non-empty list"),
        ({"a": {}}, "empty object"),
        ({"a": {"b": 1}}, "mixes operators and fields"),
        ("book = romans", "must be a JSON object"),
    ],
)
def test_malformed_filters_are_errors(spec, message):
    with pytest.raises(InputError, match=message):
        compile_filter(spec)
