"""Filters over metadata columns agree with the predicate over each chunk's metadata dict."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ragloom.filters import compile_filter, parse_filter
from ragloom.segments.columns import MetadataColumns

values = st.one_of(
    st.integers(-3, 3),
    st.sampled_from(["a", "b", "9.0", "18.0.1", "17"]),
    st.booleans(),
    st.none(),
    st.floats(-2, 2, allow_nan=False),
    st.lists(st.sampled_from(["a", "b", "c", 1]), max_size=3),
)
keys = st.sampled_from(["book", "tags", "v", "x.y", "x"])
metadata = st.dictionaries(
    keys, st.one_of(values, st.fixed_dictionaries({"y": values})), max_size=4
)
leaf = st.one_of(
    st.builds(
        lambda k, v: {k: v}, keys, st.one_of(st.integers(-3, 3), st.sampled_from(["a", "b"]))
    ),
    st.builds(
        lambda k, op, v: {k: {op: v}},
        keys,
        st.sampled_from(["$eq", "$ne", "$gt", "$gte", "$lt", "$lte"]),
        st.one_of(st.integers(-3, 3), st.sampled_from(["a", "b"])),
    ),
    st.builds(
        lambda k, op, v: {k: {op: v}},
        keys,
        st.sampled_from(["$in", "$nin", "$overlap"]),
        st.lists(st.sampled_from(["a", "b", 1, 2, True]), min_size=1, max_size=3),
    ),
    st.builds(lambda k, v: {k: {"$exists": v}}, keys, st.booleans()),
    st.builds(
        lambda k, op, v: {k: {op: v}},
        keys,
        st.sampled_from(["$version_gte", "$version_lt", "$version_eq"]),
        st.sampled_from(["9", "17.0", "18"]),
    ),
)
filters = st.recursive(
    leaf,
    lambda inner: st.one_of(
        st.builds(lambda a, b: {"$and": [a, b]}, inner, inner),
        st.builds(lambda a, b: {"$or": [a, b]}, inner, inner),
        st.builds(lambda a: {"$not": a}, inner),
    ),
    max_leaves=5,
)


@settings(max_examples=300, deadline=None)
@given(st.lists(metadata, min_size=1, max_size=30), filters)
def test_columns_match_the_dict_predicate(rows, spec) -> None:
    columns = MetadataColumns.build(rows)
    got = columns.evaluate(parse_filter(spec))
    predicate = compile_filter(spec)
    assert got.tolist() == [bool(predicate(m)) for m in rows]


@settings(max_examples=100, deadline=None)
@given(st.lists(metadata, min_size=1, max_size=20), st.lists(metadata, max_size=20), filters)
def test_concatenated_columns_keep_every_value(first, second, spec) -> None:
    a, b = MetadataColumns.build(first), MetadataColumns.build(second)
    keep_a = np.arange(len(first))[::2]
    keep_b = np.arange(len(second))
    joined = MetadataColumns.concat([(a, keep_a), (b, keep_b)])
    rows = [first[i] for i in keep_a] + second
    predicate = compile_filter(spec)
    assert joined.evaluate(parse_filter(spec)).tolist() == [bool(predicate(m)) for m in rows]
