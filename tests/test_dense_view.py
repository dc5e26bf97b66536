"""The dense leg over several segments (`ragloom.dense.cosine_search.search_view`) equals
scoring every live chunk's vector: the same rows, the same float32 cosines, best first and
ties to the lower row, whether a segment's scores reach the view whole (a small pool) or cut
to its top k first (a large one), with deletes in between."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ragloom import Document, Index
from ragloom.dense import cosine_search
from ragloom.embedding.base import Embedder, normalize_rows


class Grouped(Embedder):
    """Unit vectors from the text's first word; many texts share one (exact ties)."""

    name = "test-grouped"
    dimension = 16

    def _embed_batch(self, texts):
        seeds = [int(t.split()[0][1:]) for t in texts]
        rows = [np.random.default_rng(s).standard_normal(self.dimension) for s in seeds]
        return normalize_rows(np.array(rows, np.float32))


@pytest.fixture
def view_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    # No background maintenance: left idle (a slow machine's test takes seconds), it would
    # fold these segments into one and the test would no longer see both kinds of pool.
    monkeypatch.setenv("RAGLOOM_BACKGROUND", "0")
    index = Index(tmp_path / "v.db", embedder=Grouped())
    index.store.maintenance.flush_rows = 700
    for start in (0, 700, 1400):
        size = 700 if start < 1400 else 150
        docs = [Document(f"d{i}", f"w{i % 97} text {i}") for i in range(start, start + size)]
        index.add(docs)
    for i in range(0, 1550, 7):
        index.delete(f"d{i}")
    yield index
    index.close()


def _every_live_vector(view) -> tuple[np.ndarray, np.ndarray]:
    rows, vectors = [], []
    for part in view.parts:
        seg = part.segment
        live = np.ones(seg.n, bool) if part.dead is None else ~part.dead
        live &= np.asarray(seg.has_vector, bool)
        rows.append(seg.rows[live])
        vectors.append(np.asarray(seg.vectors)[live])
    return np.concatenate(rows), np.concatenate(vectors)


def test_the_view_equals_scoring_every_live_vector(view_index: Index) -> None:
    with view_index.store.snapshot() as snap:
        view = snap.collection("default").view
        sizes = [p.segment.n for p in view.parts]
        assert len(sizes) >= 2 and max(sizes) > cosine_search.FEW_SCORED  # both kinds of pool
        assert min(sizes) <= cosine_search.FEW_SCORED
        rows, vectors = _every_live_vector(view)
        for seed in range(40):
            query = Grouped().embed_query(f"w{seed % 97} query")
            scores = np.einsum("ij,j->i", vectors, query).astype(np.float32)
            for k in (1, 5, 10, 40):
                order = np.lexsort((rows, -scores))[:k]
                got_rows, got_scores = cosine_search.search_view(view, query, k)
                assert got_rows.tolist() == rows[order].tolist()
                np.testing.assert_allclose(got_scores, scores[order], rtol=0, atol=1e-6)
