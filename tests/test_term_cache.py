"""The segment's cache of terms' weights is bounded by `term_weights.CACHE_LIMIT` entries and,
once full, drops its least recently used half: the weights every query reads (a common
term's, `warm()`'s) stay while a stream of new terms passes through, and answers are those
of a cold index."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ragloom import Document, Index
from ragloom.lexical import term_weights


def _words(rng: np.random.Generator, count: int) -> str:
    return " ".join(f"w{int(w)}" for w in np.minimum(rng.zipf(1.3, size=count), 5000))


def _facts_of(index: Index, term: int) -> list[object]:
    """Each segment's cached facts of one term (None where there are none)."""
    with index.store.snapshot() as snap:
        parts = snap.collection("default").view.parts
    return [
        next((v for k, v in p.segment.cache.items() if k[:2] == ("facts", term)), None)
        for p in parts
    ]


def test_a_term_in_every_query_keeps_its_weights_while_new_terms_pass(
    tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setattr(term_weights, "CACHE_LIMIT", 24)
    rng = np.random.default_rng(11)
    path = tmp_path / "stream.db"
    with Index(path, embedder=None) as index:
        index.add([Document(f"d{i}", _words(rng, int(rng.integers(10, 50)))) for i in range(2000)])
        index.optimize()
        with index.store.snapshot() as snap:
            ids = snap.term_id_map([f"w{w}" for w in range(1, 5001)])
        rare = [w for w in range(60, 5001) if f"w{w}" in ids][:200]
        assert len(rare) == 200
        queries = [f"w1 w{w}" for w in rare]
        answers = [
            [(h.chunk_id, h.score) for h in index.search(q, top_k=5, mode="lexical")]
            for q in queries
        ]
        common = _facts_of(index, ids["w1"])
        assert all(f is not None for f in common)
        for q in queries:  # 200 more new sightings each (first uses are remembered too)
            index.search(q.replace("w1 ", "w1 w2 "), top_k=5, mode="lexical")
        assert all(a is b for a, b in zip(_facts_of(index, ids["w1"]), common))
        with index.store.snapshot() as snap:
            sizes = [len(p.segment.cache) for p in snap.collection("default").view.parts]
        assert max(sizes) <= 24
    with Index(path, embedder=None, read_only=True) as cold:
        assert answers == [
            [(h.chunk_id, h.score) for h in cold.search(q, top_k=5, mode="lexical")]
            for q in queries
        ]
