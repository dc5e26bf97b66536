"""A lexical search needs no embedding model: a collection whose vectors came from an Embedder
given to the library (which no other process can rebuild) is searched by BM25 from the
command line and from a library opened without that Embedder; a search that needs the model
says what to do, in the caller's words."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ragloom import Document, Index
from ragloom.embedding.base import Embedder, normalize_rows
from ragloom.errors import InputError

DOCS = [
    Document("bread", "Knead the dough, let it rise overnight, then bake the loaf."),
    Document("cats", "Cats nap in the afternoon sun and hunt at dusk."),
    Document("tides", "The moon pulls the sea: two high tides a day."),
]


class Hashed(Embedder):
    """Vectors from a hash of the words: a model only this process knows."""

    name = "test-hashed-8"
    dimension = 8

    def _embed_batch(self, texts):
        rows = [np.random.default_rng(abs(hash(t)) % 2**32).standard_normal(8) for t in texts]
        return normalize_rows(np.array(rows, np.float32))

    def config(self):
        return {"provider": "custom", "model": self.name, "dimension": self.dimension}


@pytest.fixture
def custom_index(tmp_path: Path) -> Path:
    path = tmp_path / "custom.db"
    with Index(path, embedder=Hashed()) as index:
        index.add(DOCS)
        assert index.search("dough", top_k=1).mode == "hybrid"
    return path


def ragloom(*args: str, index: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "RAGLOOM_EMBEDDER"}
    return subprocess.run(
        [sys.executable, "-m", "ragloom", "--index", str(index), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_the_command_line_searches_it_lexically(custom_index: Path) -> None:
    done = ragloom("search", "dough rise", "--mode", "lexical", "--json", index=custom_index)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["mode"] == "lexical"
    assert [h["document_id"] for h in found["results"]] == ["bread"]


def test_a_search_that_needs_the_model_says_how_to_search_without_it(
    custom_index: Path,
) -> None:
    done = ragloom("search", "dough rise", index=custom_index)
    assert done.returncode == 1
    assert "cannot rebuild embedder" in done.stderr and "test-hashed-8" in done.stderr
    assert "--mode lexical" in done.stderr
    with Index(custom_index) as index, pytest.raises(InputError) as info:
        index.search("dough rise")
    assert "mode='lexical'" in info.value.hint_for("library")


def test_the_library_searches_it_lexically_without_the_embedder(custom_index: Path) -> None:
    with Index(custom_index) as index:  # "auto": the stored model cannot be rebuilt
        hits = index.search("cats nap", mode="lexical", top_k=2)
        assert hits.mode == "lexical" and hits[0].document_id == "cats"
    with Index(custom_index, embedder="none") as index:
        assert index.search("moon tides", mode="lexical")[0].document_id == "tides"
    with Index(custom_index, embedder=Hashed()) as index:  # the model given: hybrid again
        assert index.search("moon tides", top_k=1).mode == "hybrid"


def test_warming_leaves_the_model_it_cannot_load_to_the_searches_that_need_it(
    custom_index: Path,
) -> None:
    with Index(custom_index) as index:  # as `ragloom serve` opens it
        index.warm()
        assert index.search("dough", mode="lexical")[0].document_id == "bread"
        with pytest.raises(InputError, match="cannot rebuild embedder"):
            index.search("dough")
