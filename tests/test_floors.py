"""The dense-only floor is the model's: measured per model, stored with the collection's
model, and always overridden by an explicit value."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ragloom import Document, Index
from ragloom.embedding import floors
from ragloom.embedding.floors import dense_floor_of, floor_for, model_floor
from ragloom.embedding.local import LocalEmbedder
from ragloom.engine.legs import plan_legs
from ragloom.retrieval.ranking import LegAnswers, rank_answers
from ragloom.retrieval.search_options import SearchOptions

LEXICAL_ROWS = np.array([1, 2], np.int64)
DENSE_ROWS = np.array([3, 4, 5, 1], np.int64)
DENSE_COSINES = np.array([0.52, 0.40, 0.31, 0.2])  # rows 3-5 are found by the dense leg only


def rank(options: SearchOptions, dense_floor: float | None):
    """A hybrid search's ranking of these two legs' answers."""
    answers = LegAnswers((LEXICAL_ROWS, np.array([3.0, 2.0])), (DENSE_ROWS, DENSE_COSINES))
    return rank_answers(plan_legs("q", options, True), answers, options, dense_floor)


def dense_only(ranking) -> list[int]:
    return sorted(c.row_id for c in ranking.candidates if c.match == "dense")


def test_the_models_floor_applies_when_no_value_is_given() -> None:
    ranking = rank(SearchOptions(mode="hybrid", top_k=10), dense_floor=0.35)
    assert dense_only(ranking) == [3, 4]
    assert (ranking.floor, ranking.below_floor) == (0.35, 1)


@pytest.mark.parametrize(("explicit", "kept"), [(0.45, [3]), (0.0, [3, 4, 5]), (-1.0, [3, 4, 5])])
def test_an_explicit_value_is_always_honoured(explicit: float, kept: list[int]) -> None:
    options = SearchOptions(mode="hybrid", top_k=10, min_dense_similarity=explicit)
    ranking = rank(options, dense_floor=0.35)
    assert dense_only(ranking) == kept and ranking.floor == explicit


def test_no_floor_for_a_model_nobody_measured() -> None:
    ranking = rank(SearchOptions(mode="hybrid", top_k=10), dense_floor=None)
    assert dense_only(ranking) == [3, 4, 5]
    assert (ranking.floor, ranking.below_floor) == (None, 0)
    assert floor_for("some-private-model") is None
    assert dense_floor_of({"model": "some-private-model", "dimension": 8}) is None


def test_a_collections_stored_floor_wins_over_the_table(monkeypatch) -> None:
    monkeypatch.setitem(floors.KNOWN_FLOORS, "my-model", 0.5)
    assert floor_for("My-Model:latest") == 0.5
    assert dense_floor_of({"model": "my-model"}) == 0.5
    assert dense_floor_of({"model": "my-model", "dense_floor": 0.25}) == 0.25
    assert dense_floor_of(None) is None


class DeclaredFloor(LocalEmbedder):
    """The real local model, declaring a floor of its own."""

    dense_floor = 0.9


@pytest.fixture(scope="module")
def declared() -> DeclaredFloor:
    return DeclaredFloor()


def test_the_floor_is_stored_with_the_collections_model(tmp_path: Path, declared) -> None:
    assert model_floor(declared) == 0.9
    docs = [
        Document("limits", "Rate limiting caps how many requests a client may send per minute."),
        Document("bread", "Knead the dough and let it rise overnight."),
    ]
    with Index(tmp_path / "f.db", embedder=declared) as index:
        index.add(docs)
        stored = index.stats()["collections"]["default"]["embedding"]
        assert stored["model"] == declared.name and stored["dense_floor"] == 0.9
        strict = index.search("throttling", top_k=2, mode="hybrid")
        assert list(strict) == [] and strict.dense_floor == 0.9 and strict.below_floor == 2
        loose = index.search("throttling", top_k=2, mode="hybrid", min_dense_similarity=-1)
        assert [h.document_id for h in loose][0] == "limits"
    with Index(tmp_path / "f.db") as reopened:  # "auto": the stored model and its floor
        assert reopened.search("throttling", top_k=2).dense_floor == 0.9


RATE_LIMITS = (
    "Rate limiting: the API accepts at most 100 requests per minute for each key. Beyond that "
    "it answers 429 Too Many Requests, and the client should back off and retry later."
)


def test_the_local_models_floor_keeps_a_real_paraphrase(tmp_path: Path) -> None:
    # With the 0.45 floor of another model, "throttling" found nothing: the chunk about rate
    # limiting scores about 0.35-0.40 with all-MiniLM-L6-v2.
    local = LocalEmbedder()
    assert floor_for(local.name) == 0.25 and floor_for("all-minilm") == 0.25
    docs = [
        Document("limits", RATE_LIMITS),
        Document("bread", "Knead the dough, let it rise overnight, then bake it until golden."),
        Document("cats", "Felines sleep for most of the day and hunt at dusk."),
    ]
    with Index(tmp_path / "l.db", embedder=local) as index:
        index.add(docs)
        found = index.search("throttling", top_k=3)
        assert [h.document_id for h in found] == ["limits"] and found[0].match == "dense"
        assert found.dense_floor == 0.25 and found.below_floor == 2  # the unrelated two
        old = index.search("throttling", top_k=3, min_dense_similarity=0.45)
        assert list(old) == [] and old.below_floor == 3
