"""What a search loads: the compiled kernels only for work that repays them (never for a small
index, never in a one-shot `ragloom search`), the model only for a search that embeds, with
the same answers as the compiled paths give (the lexical leg's to the last bit)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from ragloom import Document, Index
from ragloom.compiled import Compiled
from ragloom.dense import cosine_search, dots, topn
from ragloom.embedding.base import Embedder, normalize_rows
from ragloom.lexical import kernels, topk
from ragloom.lexical.bm25 import BM25Params, bm25_idf
from ragloom.lexical.topk import Stats, Target
from ragloom.segments.postings import Postings
from ragloom.segments.view import unique_sorted
from tests.segment_data import build_segment

WORDS = [
    "amber",
    "birch",
    "cedar",
    "delta",
    "ember",
    "fjord",
    "grove",
    "harbor",
    "inlet",
    "juniper",
    "kelp",
    "lagoon",
]


def _documents(count: int) -> list[Document]:
    rng = np.random.default_rng(3)
    return [
        Document(f"d{i}", " ".join(rng.choice(WORDS, size=int(rng.integers(4, 30)))))
        for i in range(count)
    ]


class Worded(Embedder):
    """Vectors from the words' counts: a model only this process knows."""

    name = "test-worded-12"
    dimension = len(WORDS)

    def _embed_batch(self, texts):
        rows = [[t.split().count(w) + 0.01 * i for i, w in enumerate(WORDS)] for t in texts]
        return normalize_rows(np.array(rows, np.float32))


@pytest.fixture
def fresh_kernels(monkeypatch: pytest.MonkeyPatch) -> None:
    """Kernels as a new process has them: none loaded yet."""
    monkeypatch.delenv("RAGLOOM_KERNELS", raising=False)
    monkeypatch.setattr(kernels, "_kernels", Compiled(kernels._build))
    monkeypatch.setattr(dots, "_kernel", Compiled(dots._build))
    monkeypatch.setattr(topn, "_kernel", Compiled(topn._build))


def _segment(n: int, seed: int = 5):
    rng = np.random.default_rng(seed)
    postings = []
    for _ in range(n):
        words = np.minimum(rng.zipf(1.3, size=int(rng.integers(5, 60))), 500) - 1
        ids, counts = np.unique(words, return_counts=True)
        postings.append(Postings(ids.astype(np.uint32), counts.astype(np.uint32)))
    return build_segment(np.arange(1, n + 1), postings, [{}] * n)


def test_a_small_lexical_search_leaves_the_kernels_unloaded(
    fresh_kernels: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    segment = _segment(3000)
    terms = [0, 4, 17]
    df = {t: len(segment.postings(t)[0]) for t in terms}
    stats = Stats({t: bm25_idf(df[t], segment.n) for t in terms}, segment.total_length / 3000)
    targets, params = [Target(segment, None)], BM25Params()
    want = topk.search(targets, terms, 10, stats, params, prune=False)
    small = topk.search(targets, terms, 10, stats, params)
    assert kernels._kernels.loaded() is None  # numpy scored it: nothing to repay a load
    monkeypatch.setattr(topk, "SMALL_SEGMENT", 64)  # now work numpy would prune
    monkeypatch.setattr(topk, "SMALL_WORK", 0)
    large = topk.search(targets, terms, 10, stats, params)
    assert kernels._kernels.loaded() is not None
    for got in (small, large):
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])  # the same bits


def test_a_small_collections_dense_search_leaves_the_kernels_unloaded(
    fresh_kernels: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Index(tmp_path / "small.db", embedder=Worded()) as index:
        index.add(_documents(600))
        small = index.search("cedar fjord kelp", mode="dense", top_k=5)
        assert dots._kernel.loaded() is None and topn._kernel.loaded() is None
        monkeypatch.setattr(cosine_search, "COMPILED_FROM", 0)
        large = index.search("cedar fjord kelp", mode="dense", top_k=5)
        assert dots._kernel.loaded() is not None
    assert [h.chunk_id for h in small] == [h.chunk_id for h in large]
    np.testing.assert_allclose([h.score for h in small], [h.score for h in large], atol=2e-6)


ONE_SHOT = """
import json, sys
import ragloom.lexical.topk as topk
import ragloom.dense.cosine_search as cosine_search
topk.SMALL_SEGMENT, topk.SMALL_WORK, cosine_search.COMPILED_FROM = 1, 0, 0  # big work here
from ragloom.cli.app import main
try:
    main(sys.argv[1:])
except SystemExit as exc:
    assert not exc.code, exc.code
unused = (
    "numba", "onnxruntime", "httpx", "faiss", "ragloom.loading", "pathspec", "numpy.ma",
    "rich.progress", "rich.table",
)
loaded = [m for m in unused if m in sys.modules]
print(json.dumps(loaded), file=sys.stderr)
"""


def _one_shot(index: Path, *args: str) -> tuple[dict, list[str]]:
    env = {k: v for k, v in os.environ.items() if k not in ("RAGLOOM_EMBEDDER", "RAGLOOM_KERNELS")}
    done = subprocess.run(
        [sys.executable, "-c", ONE_SHOT, "--index", str(index), "search", *args, "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), json.loads(done.stderr.strip().splitlines()[-1])


def test_a_one_shot_search_loads_no_kernels_and_answers_as_they_do(
    fresh_kernels: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "one.db"
    with Index(path, embedder="none") as index:
        index.add(_documents(2000))
    found, loaded = _one_shot(path, "ember grove lagoon", "--top-k", "8")
    # neither numba, the model's runtime, httpx, faiss, the file loader (with its .gitignore
    # rules), numpy's masked arrays (numpy 2's np.unique imports them: 57 ms), nor rich's
    # progress bars and tables (what indexing and the reports print with: 11-28 ms)
    assert loaded == []
    monkeypatch.setattr(topk, "SMALL_SEGMENT", 1)
    monkeypatch.setattr(topk, "SMALL_WORK", 0)
    with Index(path, embedder="none") as index:  # a long-lived process: the kernels serve
        want = index.search("ember grove lagoon", top_k=8)
        assert kernels._kernels.loaded() is not None
    got = [(h["chunk_id"], h["score"]) for h in found["results"]]
    assert got == [(h.chunk_id, h.score) for h in want]


def test_a_one_shot_lexical_search_of_a_local_model_collection_loads_no_model(
    tmp_path: Path,
) -> None:
    path = tmp_path / "local.db"
    with Index(path, embedder="local") as index:
        index.add(_documents(40))
    found, loaded = _one_shot(path, "cedar inlet", "--mode", "lexical")
    assert found["mode"] == "lexical" and found["results"]
    assert loaded == []
    found, loaded = _one_shot(path, "cedar inlet")
    assert found["mode"] == "hybrid" and found["results"]
    assert loaded == ["onnxruntime"]


@given(arrays(st.sampled_from([np.int64, np.uint32, np.int32]), st.integers(0, 300)))
def test_unique_sorted_is_numpys_unique(values: np.ndarray) -> None:
    """The read path's distinct values (numpy's masked arrays never imported): np.unique's
    answer, values and dtype."""
    got, want = unique_sorted(values), np.unique(values)
    assert got.dtype == want.dtype and got.tolist() == want.tolist()
