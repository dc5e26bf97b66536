"""The plain lexical query's route (`ragloom.engine.plain`) gives what the general route gives:
the same hits with every field, the same result and the same ranking, on each store, for
queries whose top k holds ties (those go the general way), filters, deleted documents,
other BM25 parameters, and every k."""

from __future__ import annotations

import numpy as np
import pytest

from ragloom import Document, Index
from ragloom.engine import plain, searching
from ragloom.engine.keywords import search_options

WORDS = ["amber", "birch", "cedar", "delta", "ember", "fjord", "grove", "harbor", "inlet"]
QUERIES = ["amber", "cedar fjord", "inlet inlet harbor", "zzz", "???", "grove birch delta amber"]


def _documents() -> list[Document]:
    rng = np.random.default_rng(8)
    docs = [
        Document(
            f"d{i:03d}",
            " ".join(rng.choice(WORDS, size=int(rng.integers(3, 12)))),
            metadata={"group": i % 4},
        )
        for i in range(150)
    ]
    docs += [Document(f"copy{i}", "amber cedar fjord harbor") for i in range(6)]  # exact ties
    return docs


def _both(index: Index, monkeypatch: pytest.MonkeyPatch, query: str, **options):
    """(plain route's result and ranking, general route's), the same search each."""
    opts = search_options(options.pop("top_k", 5), **options)
    plain_way = (index.search_with(query, opts), index.rank(query, opts))
    with monkeypatch.context() as general:
        general.setattr(searching, "plain_answer", lambda legs, query: None)
        return plain_way, (index.search_with(query, opts), index.rank(query, opts))


def _same(a, b) -> None:
    (result, ranking), (want, want_ranking) = a, b
    assert [vars(h) for h in result] == [vars(h) for h in want]
    for name in ("mode", "degraded", "reason", "steps", "dense_floor", "below_floor"):
        assert getattr(result, name) == getattr(want, name), name
    assert result.timings.keys() == want.timings.keys()
    assert [vars(c) for c in ranking.candidates] == [vars(c) for c in want_ranking.candidates]
    assert (ranking.mode, ranking.degraded, ranking.floor) == (
        want_ranking.mode,
        want_ranking.degraded,
        want_ranking.floor,
    )


def _kept(taken: list, query: str, answer):
    taken.append((query, answer))
    return answer


def test_plain_queries_answer_as_the_general_route(locate, monkeypatch) -> None:
    taken = []  # (query, what the plain route answered; None: left to the general route)
    answer = plain.plain_answer
    monkeypatch.setattr(searching, "plain_answer", lambda legs, q: _kept(taken, q, answer(legs, q)))
    with Index(locate("plain"), embedder="none") as index:
        index.add(_documents())
        index.delete("d007")
        for query in QUERIES:
            for k in (1, 3, 10, 200):
                for extra in ({}, {"filters": {"group": 2}}, {"bm25": {"k1": 1.5, "b": 0.9}}):
                    _same(*_both(index, monkeypatch, query, top_k=k, **extra))
    assert any(a is not None and a.rows for _, a in taken)  # the plain route answered some
    tied = [q for q, a in taken if a is None and q != "???"]  # "???" asks nothing
    assert tied  # and left the tied ones to the general route


def test_what_is_not_plain_takes_the_general_route(tmp_path, monkeypatch) -> None:
    with Index(tmp_path / "p.db", embedder="none") as index:
        index.add(_documents())
        with index.store.snapshot() as snap:
            from ragloom.engine.embedders import QueryVectors
            from ragloom.engine.legs import open_legs

            def legs(**options):
                return open_legs(
                    snap,
                    search_options(5, **options),
                    "default",
                    QueryVectors(index.models),
                    index.models,
                    "p.db",
                )

            assert plain.is_plain(legs())
            assert any(plain.plain_answer(legs(), q) is not None for q in QUERIES)
            assert plain.plain_answer(legs(), "???") is None  # asks nothing: no leg runs
            for options in (
                {"explain": True},
                {"tokens": True},
                {"min_score": 0.1},
                {"boosts": [{"when": {"group": 1}, "factor": 2.0}]},
                {"diversity": {"max_per": {"group": 1}}},
                {"expand": "prf"},
            ):
                assert not plain.is_plain(legs(**options)), options
        explained = index.search("amber", explain=True)
        assert explained and all(h.explain for h in explained)
