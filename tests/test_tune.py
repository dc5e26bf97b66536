"""`ragloom tune` and a collection's own default search settings."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

import ragloom
from ragloom.config import CollectionConfig
from ragloom.errors import InputError
from ragloom.evaluation.beir import load_beir
from ragloom.evaluation.leg_cache import LegCache
from ragloom.evaluation.prepare import prepared_index
from ragloom.evaluation.runner import EVAL_COLLECTION, whole_document_config
from ragloom.evaluation.suite import Scorer, Setting
from ragloom.evaluation.tune import Grid, Tuner, holdout_split, search_settings
from ragloom.retrieval.search_options import SearchOptions
from tests.server_launch import ServerProcess

from .embed_server import EmbedServer
from .eval_data import write_collection

NOTES = [
    ragloom.Document(f"n{i}", f"note {i} on the silver key and the door {i}") for i in range(8)
]


@pytest.fixture(scope="module")
def service():
    with EmbedServer() as server:
        yield server


def spec(service: EmbedServer) -> str:
    return f"openai:fake@{service.url}"


def test_tuner_searches_every_coordinate(tmp_path: Path, service: EmbedServer) -> None:
    dataset = load_beir(write_collection(tmp_path / "mini"), "train")
    grid = Grid(
        dense_weights=(0.2, 0.8), rrf_ks=(5.0, 60.0), candidates=(5, 40), floors=(-1.0, 0.45)
    )
    with prepared_index(dataset, whole_document_config(), spec(service)) as prepared:
        cache = LegCache(prepared.index, EVAL_COLLECTION, dense=True)
        scorer = Scorer(dataset, cache, prepared.index.chunk_documents(EVAL_COLLECTION))
        tuner = Tuner(scorer, grid)
        chosen = tuner.run()
        tried = [trial.options for trial in tuner.trials.values()]
        assert tried[0] == SearchOptions(mode="hybrid")  # the defaults come first
        assert {o.fusion for o in tried} == {"adaptive", "rrf", "weighted"}
        assert {o.normalization for o in tried if o.fusion == "weighted"} == {"minmax", "zscore"}
        assert {o.rrf_k for o in tried if o.fusion == "rrf"} >= {5.0, 60.0}
        assert {o.candidates for o in tried} == {5, 40}
        # None: the model's own measured floor (the defaults' and each family's start)
        assert {o.min_dense_similarity for o in tried} == {None, -1.0, 0.45}
        assert {(o.weights or {}).get("dense") for o in tried} >= {0.2, 0.8}
        best = max(trial.ndcg for trial in tuner.trials.values())
        assert tuner.score(chosen) == best  # honest: the best trial is the one chosen
        assert scorer.score(Setting("again", chosen), recall=False).metrics["ndcg@10"] == best


def test_holdout_split_is_stable_and_disjoint(tmp_path: Path) -> None:
    dataset = load_beir(write_collection(tmp_path / "mini"), "test")
    train, test = holdout_split(dataset, 0.4)
    again_train, _ = holdout_split(dataset, 0.4)
    assert set(train.qrels) == set(again_train.qrels)
    assert not set(train.qrels) & set(test.qrels)
    assert set(train.qrels) | set(test.qrels) == set(dataset.qrels)
    with pytest.raises(InputError):
        holdout_split(dataset, 1.5)


def test_collection_defaults_apply_unless_the_search_says_otherwise(tmp_path: Path) -> None:
    with EmbedServer() as svc, ragloom.Index(tmp_path / "i.db", embedder=spec(svc)) as index:
        index.add(NOTES, "notes")
        plain = index.search("silver key", collection="notes", explain=True)[0].explain["fusion"]
        assert plain["method"] == "adaptive"  # the default: weights chosen per query
        assert plain["weights"]["lexical"] + plain["weights"]["dense"] == pytest.approx(1.0)
        tuned = {"fusion": "rrf", "rrf_k": 7.0, "weights": {"lexical": 0.3, "dense": 0.7}}
        config = index.configure("notes", search={**tuned, "candidates": 12})
        assert config.search["rrf_k"] == 7.0
        fusion = index.search("silver key", collection="notes", explain=True)[0].explain["fusion"]
        assert fusion["method"] == "rrf" and fusion["k"] == 7.0
        assert fusion["weights"] == {"lexical": 0.3, "dense": 0.7}
        own_k = index.search("silver key", collection="notes", rrf_k=30, explain=True)
        assert own_k[0].explain["fusion"]["k"] == 30 and own_k[0].explain["fusion"]["weights"] == {
            "lexical": 0.3,
            "dense": 0.7,
        }
        # another method: the stored k and weights belong to RRF and are not taken
        other = index.search("silver key", collection="notes", fusion="weighted", explain=True)
        assert other[0].explain["fusion"]["weights"] == {"lexical": 0.3, "dense": 0.7}
        with pytest.raises(InputError, match="unknown setting"):
            index.configure("notes", search={"fusoin": "rrf"})
        with pytest.raises(InputError):
            index.configure("notes", search={"fusion": "max"})
        assert index.configure("notes").search["fusion"] == "rrf"  # the bad calls changed nothing
    assert CollectionConfig.from_dict({}).search == {}


def test_tune_cli_applies_the_choice_and_search_uses_it(
    tmp_path: Path, service: EmbedServer
) -> None:
    folder = write_collection(tmp_path / "mini")
    target = tmp_path / "app.db"
    with ragloom.Index(target, embedder=spec(service)) as index:
        index.add(NOTES, "notes")
    args = [sys.executable, "-m", "ragloom.cli", "--index", str(target), "--embedder"]
    args += [spec(service), "tune", str(folder), "--apply", "notes", "--json"]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    answer = json.loads(proc.stdout)
    assert answer["train_queries"] == 20 and answer["test_queries"] == 20
    names = [row["setting"] for row in answer["results"]]
    assert names[:2] == ["lexical", "dense"] and names[2].startswith("hybrid default")
    default, tuned = answer["results"][2], answer["results"][3]
    assert tuned["train"]["ndcg@10"] >= default["train"]["ndcg@10"]
    assert set(tuned["test"]) == {"ndcg@10", "recall@100", "mrr@10"}
    assert tuned["settings"] == answer["chosen"]
    chosen = answer["chosen"]
    with ragloom.Index(target, embedder=spec(service)) as index:
        assert index.configure("notes").search == chosen
        fusion = index.search("silver key", collection="notes", explain=True)[0].explain["fusion"]
        assert fusion["method"] == chosen["fusion"]
    # the sidecar's searches use it too, unless the request names another setting
    with ServerProcess(target, env={"RAGLOOM_EMBEDDER": spec(service)}) as server:
        body = {"query": "silver key", "collection": "notes", "explain": True}
        hit = httpx.post(f"{server.url}/query", json=body).json()["results"][0]
        assert hit["explain"]["fusion"]["method"] == chosen["fusion"]
        other = "rrf" if chosen["fusion"] == "weighted" else "weighted"
        hit = httpx.post(f"{server.url}/query", json={**body, "fusion": other}).json()
        assert hit["results"][0]["explain"]["fusion"]["method"] == other
    unknown = subprocess.run(args[:-3] + ["--apply", "nope"], capture_output=True, text=True)
    assert unknown.returncode == 1 and "no collection 'nope'" in unknown.stderr


def test_search_settings_round_trip() -> None:
    options = SearchOptions(mode="hybrid", fusion="rrf", rrf_k=20, weights={"dense": 0.6})
    stored = search_settings(options)
    assert stored == {
        "fusion": "rrf",
        "rrf_k": 20,
        "weights": {"dense": 0.6},
        "candidates": 40,
    }  # no floor named: the collection keeps its model's measured floor
    floored = search_settings(SearchOptions(mode="hybrid", min_dense_similarity=0.3))
    assert floored["min_dense_similarity"] == 0.3
    assert CollectionConfig(search=stored).search == stored
