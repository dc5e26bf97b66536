"""A filter that compares a field with a value of another kind (`{"hives": {"$gt": "five"}}`
on a field holding numbers) is a typed error naming the field and its kind, on both stores,
in the library, the command line and over HTTP; it never answers nothing with success."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import ragloom
from ragloom import Document
from ragloom.errors import FilterTypeMismatch, InputError
from ragloom.filters import mistyped, parse_filter

DOCS = [
    Document("a", "bees and hives on the hill", metadata={"hives": 5, "keeper": {"age": 40}}),
    Document("b", "bees in winter", metadata={"hives": 2, "day": "2024-03-01"}),
    Document("c", "honey from the bees", metadata={"mixed": "7"}),
    Document("d", "more bees", metadata={"mixed": 3}),
]


@pytest.mark.parametrize(
    "spec, field, holds",
    [
        ({"hives": {"$gt": "five"}}, "hives", "numbers"),
        ({"hives": {"$lte": "3"}}, "hives", "numbers"),
        ({"day": {"$gte": 2024}}, "day", "strings"),
        ({"keeper.age": {"$lt": "old"}}, "keeper.age", "numbers"),
        ({"$or": [{"hives": {"$gt": 1}}, {"hives": {"$lt": "x"}}]}, "hives", "numbers"),
    ],
)
def test_comparing_a_field_with_another_kind_is_an_error(locate, spec, field, holds) -> None:
    with ragloom.Index(locate(), embedder=None) as index:
        index.add(DOCS)
        with pytest.raises(FilterTypeMismatch) as caught:
            index.search("bees", filters=spec)
    error = caught.value
    assert error.code == "filter_type" and isinstance(error, InputError)
    assert repr(field) in error.message and holds in error.message, error.message


@pytest.mark.parametrize(
    "spec, expected",
    [
        ({"hives": {"$gt": 3}}, ["a"]),
        ({"day": {"$gte": "2024-01-01"}}, ["b"]),
        ({"mixed": {"$gt": 1}}, ["d"]),  # the field holds both kinds: compares what it can
        ({"mixed": {"$gt": "1"}}, ["c"]),
        ({"absent": {"$gt": "x"}}, []),  # no chunk has the field: nothing to compare with
    ],
)
def test_comparable_filters_still_answer(locate, spec, expected) -> None:
    with ragloom.Index(locate(), embedder=None) as index:
        index.add(DOCS)
        hits = index.search("bees", top_k=10, filters=spec)
        assert sorted(h.document_id for h in hits) == expected


def test_mistyped_is_a_pure_check() -> None:
    (leaf,) = [parse_filter({"n": {"$gt": "five"}})]
    assert mistyped(leaf, [1, 2.5]) is not None
    assert mistyped(leaf, [1, "x"]) is None and mistyped(leaf, []) is None
    assert mistyped(leaf, [True, None, [1]]) is None  # nothing comparable at all


def test_command_line_and_http_name_the_mismatch(tmp_path) -> None:
    from tests.server_launch import ServerProcess

    path = tmp_path / "i.db"
    with ragloom.Index(path, embedder=None) as index:
        index.add(DOCS)
    done = subprocess.run(
        [sys.executable, "-m", "ragloom.cli", "--index", str(path), "search", "bees"]
        + ["--filter", json.dumps({"hives": {"$gt": "five"}})],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0 and "'hives'" in done.stderr and "numbers" in done.stderr
    assert "Traceback" not in done.stderr
    import httpx

    with ServerProcess(path, env={"RAGLOOM_EMBEDDER": "none"}) as server:
        body = {"query": "bees", "filters": {"hives": {"$gt": "five"}}}
        answer = httpx.post(f"{server.url}/query", json=body, timeout=30)
    assert answer.status_code == 400 and answer.json()["code"] == "filter_type", answer.text


def test_a_shard_set_names_the_mismatch_too() -> None:
    from .shard_set import start_shards

    servers = start_shards(2)
    try:
        with ragloom.Index(servers.url(), embedder=None) as index:
            index.add(DOCS)
            with pytest.raises(FilterTypeMismatch, match="'hives' holds numbers"):
                index.search("bees", filters={"hives": {"$gt": "five"}})
            hits = index.search("bees", top_k=10, filters={"hives": {"$gt": 3}})
            assert [h.document_id for h in hits] == ["a"]
    finally:
        servers.stop()
