"""The most common terms' BM25 weights built ahead (`Index.warm`, `bm25_search.warm_view`):
the terms with the longest postings first, within the byte budget, keyed as the searches key
them (a search of a warmed term builds nothing), and the answers unchanged."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from ragloom import Document, Index
from ragloom.lexical import bm25_search
from ragloom.lexical.term_weights import TermFacts


def _words(rng: np.random.Generator, count: int) -> str:
    """Zipf-distributed words: a few terms are in most chunks, most in few."""
    return " ".join(f"w{int(w)}" for w in np.minimum(rng.zipf(1.4, size=count), 3000))


@pytest.fixture
def index(tmp_path: Path):
    rng = np.random.default_rng(3)
    index = Index(tmp_path / "warm.db", embedder=None)
    index.add([Document(f"d{i}", _words(rng, int(rng.integers(8, 40)))) for i in range(3000)])
    index.optimize()  # (its own segment)
    index.add([Document(f"e{i}", _words(rng, int(rng.integers(8, 40)))) for i in range(800)])
    yield index
    index.close()


def _facts(index: Index) -> dict[tuple, TermFacts]:
    """Every segment's cached term facts, by (segment's place, "facts", term, statistics)."""
    with index.store.snapshot() as snap:
        parts = snap.collection("default").view.parts
    return {
        (place, *key): value
        for place, part in enumerate(parts)
        for key, value in part.segment.cache.items()
        if key[0] == "facts"
    }


def _cold_answers(path: Path, queries: list[str]) -> list[list[tuple[str, float]]]:
    with Index(path, embedder=None, read_only=True) as cold:
        return [
            [(h.chunk_id, h.score) for h in cold.search(q, top_k=10, mode="lexical")]
            for q in queries
        ]


def test_the_longest_postings_are_built_within_the_budget(index: Index) -> None:
    with index.store.snapshot() as snap:
        reader = snap.collection("default")
        parts = reader.view.parts
        assert len(parts) == 2, "the test needs two segments"
        for part in parts:
            part.segment.cache.clear()
        sizes = sorted((int(d) for part in parts for d in np.diff(part.segment.ptr)), reverse=True)
        budget = 8 * sum(sizes[:25]) + 4  # room for the 25 longest postings, not the 26th
        built = bm25_search.warm_view(reader.view, reader.config.bm25, budget)
    facts = _facts(index)
    assert built == 8 * sum(sizes[:25]) == 8 * sum(len(f.docs) for f in facts.values())
    assert sorted((len(f.docs) for f in facts.values()), reverse=True) == sizes[:25]


def test_a_search_of_warmed_terms_builds_nothing_and_answers_the_same(index: Index) -> None:
    index.warm(wait=True)
    warmed = _facts(index)
    longest = sorted(warmed, key=lambda key: -len(warmed[key].docs))
    common = list(dict.fromkeys(key[2] for key in longest))[:6]  # (name, "facts", term, ...)
    assert len(common) >= 3
    with index.store.snapshot() as snap:
        ids = snap.term_id_map([f"w{w}" for w in range(1, 3001)])
    words = {i: word for word, i in ids.items()}
    queries = [f"{words[a]} {words[b]}" for a, b in zip(common, common[1:])]
    answers = [
        [(h.chunk_id, h.score) for h in index.search(q, top_k=10, mode="lexical")] for q in queries
    ]
    assert _facts(index).keys() == warmed.keys()  # the searches' keys: nothing built anew
    assert answers == _cold_answers(index.path, queries)


def test_filtered_searches_keep_the_weights_built_ahead(tmp_path: Path) -> None:
    """A filter's chunk mask is remembered on the segment apart from the terms' weights: a
    search with a filter not met before (each tag here) drops none of them (the mask cache
    once shared their dict and emptied it past 64 entries: every new filter after open
    threw away every weight `warm()` had built)."""
    rng = np.random.default_rng(5)
    with Index(tmp_path / "tags.db", embedder=None) as index:
        docs = [
            Document(f"d{i}", _words(rng, int(rng.integers(8, 40))), metadata={"tag": i % 90})
            for i in range(3000)
        ]
        index.add(docs)
        index.optimize()
        index.warm(wait=True)
        warmed = _facts(index)
        assert len(warmed) > 64, "the test needs more weights built ahead than masks kept"
        hits = [
            index.search("w1 w2", top_k=5, mode="lexical", filters={"tag": t}) for t in range(80)
        ]
        assert all(hits) and all(
            h.metadata["tag"] == t for t, found in enumerate(hits) for h in found
        )
        kept = _facts(index)
        assert [key for key in warmed if kept.get(key) is not warmed[key]] == []


def test_the_builder_reads_nothing_of_a_closed_index(tmp_path: Path, monkeypatch) -> None:
    """The builder works on the views' segments alone: an index closed while it runs (its
    connections gone) takes nothing from under it, and nothing is lost."""
    rng = np.random.default_rng(4)
    path = tmp_path / "close.db"
    with Index(path, embedder=None) as index:
        index.add([Document(f"d{i}", _words(rng, 20)) for i in range(500)])
    closed, built, failures = threading.Event(), [], []
    real = bm25_search.warm_view

    def after_close(view, params, budget=bm25_search.WARM_BYTES):
        assert closed.wait(30)
        built.append(real(view, params, budget))

    monkeypatch.setattr(bm25_search, "warm_view", after_close)
    monkeypatch.setattr(threading, "excepthook", lambda args: failures.append(args.exc_value))
    index = Index(path, embedder=None)
    opened_by = []  # the threads that open a snapshot of the store
    snapshot = index.store.snapshot

    def spied():
        opened_by.append(threading.current_thread().name)
        return snapshot()

    monkeypatch.setattr(index.store, "snapshot", spied)
    index.warm()  # (not waited for)
    builders = [t for t in threading.enumerate() if t.name == "ragloom-warm-terms"]
    index.close()
    closed.set()
    for builder in builders:
        builder.join(30)
    assert builders and not failures and built and built[0] > 0
    assert opened_by and "ragloom-warm-terms" not in opened_by  # no snapshot, no connection
    with Index(path, embedder=None) as index:
        assert index.check() == [] and index.stats()["collections"]["default"]["chunks"] == 500


def test_a_collection_with_nothing_live_builds_nothing(tmp_path: Path) -> None:
    with Index(tmp_path / "gone.db", embedder=None) as index:
        index.store.maintenance.flush_rows = 20  # a segment file, whose chunks are then deleted
        index.add([Document(f"d{i}", "granite harbour lights") for i in range(30)])
        index.optimize()
        index.delete_many([f"d{i}" for i in range(30)])
        with index.store.snapshot() as snap:
            reader = snap.collection("default")
            assert reader.view.parts and reader.view.n_live == 0
            assert bm25_search.warm_view(reader.view, reader.config.bm25) == 0


LOADED_AFTER_WARM = """
import sys
from ragloom import Index
from ragloom.dense import dots, topn
from ragloom.lexical import kernels
with Index(sys.argv[1], embedder=None) as index:
    before = (kernels.ready(), dots._kernel.loaded(), topn._kernel.loaded())
    index.warm()
    after = (kernels.ready(), dots._kernel.loaded() is not None, topn._kernel.loaded() is not None)
    print(before == (False, None, None), after)
"""


def test_warm_returns_with_every_kernel_loaded(tmp_path: Path) -> None:
    """`warm` loads every compiled kernel before it returns, in a fresh process where nothing
    was loaded before: no search after it loads one, or changes path midway."""
    pytest.importorskip("numba")
    path = tmp_path / "kernels.db"
    rng = np.random.default_rng(5)
    with Index(path, embedder=None) as index:
        index.add([Document(f"d{i}", _words(rng, 20)) for i in range(200)])
    run = subprocess.run(
        [sys.executable, "-c", LOADED_AFTER_WARM, str(path)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "RAGLOOM_KERNELS": "1"},
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["True", "(True,", "True,", "True)"]
