"""Approximate search on large segments: graphs built when writes pause, deletes and filters
honoured, results re-scored exactly, and close to exact search."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ragloom import Document, Index
from ragloom.embedding.base import Embedder, normalize_rows

pytest.importorskip("faiss")


class Clustered(Embedder):
    """Vectors with neighbour structure: a topic per word, mixed with a little noise."""

    name = "test-clustered"
    dimension = 32

    def _embed_batch(self, texts):
        out = []
        for text in texts:
            rng = np.random.default_rng(abs(hash(text.split()[1])) % 2**32)
            base = rng.standard_normal(self.dimension)
            noise = np.random.default_rng(abs(hash(text)) % 2**32).standard_normal(self.dimension)
            out.append(base + 0.3 * noise)
        return normalize_rows(np.array(out, np.float32))


WORDS = [f"topic{i}" for i in range(40)]


@pytest.fixture
def graph_index(tmp_path: Path, monkeypatch):
    import ragloom.dense.graph as ann

    monkeypatch.setattr(ann, "ANN_MIN", 500)
    index = Index(tmp_path / "g.db", embedder=Clustered())
    index.store.maintenance.flush_rows = 900
    docs = [
        Document(f"d{i}", f"doc {WORDS[i % 40]} number {i}", metadata={"g": i % 10, "s": i % 200})
        for i in range(2400)
    ]
    index.add(docs)
    index.optimize()
    yield index
    index.close()


def _exact(index: Index, query: str, k: int, spec=None) -> list[str]:
    """Brute force over every live chunk's vector, the filter applied first."""
    vector = Clustered().embed_query(query)
    hits = []
    for doc in index.documents(limit=10_000):
        if spec and any(doc.metadata.get(key) != value for key, value in spec.items()):
            continue
        text = index.document_text(doc.doc_id)
        hits.append((-float(Clustered().embed([text])[0] @ vector), f"{doc.doc_id}-0"))
    return [chunk for _, chunk in sorted(hits)[:k]]


def test_graphs_are_built_and_searches_stay_close_to_exact(graph_index: Index) -> None:
    counts = graph_index.stats()["collections"]["default"]
    assert counts["segments"]["graphs"] >= 1
    overlap = []
    for i in range(0, 40, 4):
        query = f"query {WORDS[i]} here"
        hits = graph_index.search(query, top_k=10, mode="dense")
        exact = _exact(graph_index, query, 10)
        overlap.append(len({h.chunk_id for h in hits} & set(exact)) / 10)
        vector = Clustered().embed_query(query)
        for hit in hits:  # scores are exact cosines, not 8-bit approximations
            text = graph_index.document_text(hit.document_id)
            assert hit.dense_score == pytest.approx(
                float(Clustered().embed([text])[0] @ vector), abs=1e-5
            )
    assert np.mean(overlap) >= 0.9


def test_deleted_chunks_and_filters_are_honoured(graph_index: Index) -> None:
    for i in range(0, 2400, 3):
        graph_index.delete(f"d{i}")
    for spec in ({"g": 3}, {"s": 7}):  # 10% (through the graph) and 0.5% (scanned exactly)
        hits = graph_index.search("query topic3 here", top_k=10, mode="dense", filters=spec)
        assert hits and all(h.metadata[k] == v for h in hits for k, v in spec.items())
        assert all(int(h.document_id[1:]) % 3 for h in hits)
        exact = _exact(graph_index, "query topic3 here", 10, spec)
        assert len({h.chunk_id for h in hits} & set(exact)) >= 8


def _live(path: Path, suffix: str) -> list[Path]:
    """A closed index's files of this kind that its manifest lists as live: files merged
    away stay in the folder for readers of older versions for a minute, and closing may
    finish a merge (damaging a file merged away changes nothing)."""
    with Index(path, embedder=None, read_only=True) as index, index.store.snapshot() as snap:
        names = snap.conn.execute("SELECT name FROM segments WHERE retired_at IS NULL")
        paths = [index.store.files.folder / f"{name}{suffix}" for (name,) in names]
    return sorted(p for p in paths if p.exists())


def test_repair_rebuilds_lost_graphs_and_damaged_segments(graph_index: Index) -> None:
    before = [h.chunk_id for h in graph_index.search("query topic5 here", top_k=5, mode="lexical")]
    path = graph_index.path
    graph_index.close()
    graphs, segments = _live(path, ".hnsw"), _live(path, ".seg")
    assert graphs and segments
    graphs[0].unlink()  # a lost graph: searched exactly until rebuilt
    segments[-1].write_bytes(b"RGLMSEG1" + b"\0" * 20)  # a damaged segment file
    with Index(path, embedder=Clustered()) as index:
        problems = index.check()
        assert any("cannot load" in p for p in problems), problems
        actions = index.repair()
        assert any("rebuilt from its rows" in a for a in actions), actions
        assert index.check() == []
        after = [h.chunk_id for h in index.search("query topic5 here", top_k=5, mode="lexical")]
        assert after == before  # the rows are the truth: nothing lexical was lost
        waiting = index.stats()["pending"]
        assert waiting > 0  # vectors that lived only in the damaged file are re-embedded
        assert index.fill_pending() == waiting
        assert index.search("query topic5 here", mode="dense")
        index.store.maintenance.flush_rows = 900
        index.optimize()
        assert index.stats()["collections"]["default"]["segments"]["graphs"] >= 1


def test_a_truncated_graph_is_ignored_and_repaired(graph_index: Index, caplog) -> None:
    """Graph files are searched in place (mapped, not copied): one cut short by a crash or a
    full disk must be refused when first read, never read past its end; searches are exact
    until `repair` rebuilds it."""
    query = "query topic5 here"
    path = graph_index.path
    graph_index.close()
    live = _live(path, ".hnsw")
    graph, graphs = live[0], len(live)
    whole = graph.read_bytes()
    graph.write_bytes(whole[: len(whole) // 2])
    with Index(path, embedder=Clustered()) as index:
        with caplog.at_level("WARNING", logger="ragloom.store"):
            got = [h.chunk_id for h in index.search(query, top_k=10, mode="dense")]
        assert any("ignoring damaged graph" in r.getMessage() for r in caplog.records)
        assert got == _exact(index, query, 10)
        assert index.stats()["collections"]["default"]["segments"]["graphs"] == graphs - 1
        index.repair()
        assert index.stats()["collections"]["default"]["segments"]["graphs"] == graphs
    caplog.clear()
    with Index(path, embedder=None, read_only=True) as reopened:  # the file on disk is whole
        with caplog.at_level("WARNING", logger="ragloom.store"):
            reopened.search(query, top_k=10, mode="lexical")
            assert reopened.stats()["collections"]["default"]["segments"]["graphs"] == graphs
        assert not any("ignoring damaged graph" in r.getMessage() for r in caplog.records)
        assert graph.exists()  # (rebuilt in place; its size may differ from the first build)


LEXICAL_ONLY = """
import sys
from ragloom import Index
with Index(sys.argv[1], read_only=True) as index:
    assert index.search("query topic5 here", top_k=5, mode="lexical")
print("faiss" in sys.modules)
"""


def test_graphs_are_read_when_a_dense_search_first_needs_them(graph_index: Index) -> None:
    """A lexical search maps no graph file and, in a process of its own (a one-shot `ragloom
    search --mode lexical`), never imports faiss; the first dense search maps them."""
    path = graph_index.path
    graph_index.close()
    done = subprocess.run(
        [sys.executable, "-c", LEXICAL_ONLY, str(path)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False"]
    with Index(path, embedder=Clustered(), read_only=True) as index:
        lexical = index.search("query topic5 here", top_k=5, mode="lexical")
        with index.store.snapshot() as snap:
            parts = snap.collection("default").view.parts
        assert lexical and all(p.segment.ann is None for p in parts)
        assert index.search("query topic5 here", top_k=5, mode="dense")
        assert any(p.segment.ann is not None for p in parts)


def test_graphs_are_searched_in_place_not_copied(graph_index: Index) -> None:
    """An opener maps each graph file and searches it there: no copy in anonymous memory
    (the graph's links and 8-bit codes are views of the file, not owned buffers)."""
    import faiss

    path = graph_index.path
    graph_index.close()
    with Index(path, embedder=Clustered(), read_only=True) as index:
        index.warm()
        with index.store.snapshot() as snap:
            parts = snap.collection("default").view.parts
        graphs = [p.segment.ann.index for p in parts if p.segment.ann is not None]
        assert graphs
        for graph in graphs:
            assert not graph.hnsw.neighbors.is_owned
            assert not faiss.downcast_index(graph.storage).codes.is_owned
        assert index.search("query topic5 here", top_k=5, mode="dense")


def test_a_selective_filter_lists_its_chunks_again_exactly(graph_index: Index) -> None:
    """The exact scan of a selective filter's few chunks (their list remembered per filter)
    returns every eligible chunk, each time, for each filter, and forgets deleted ones. (A
    filter's chunks share their topic with the query: cosines above 0, no ties at 0.)"""
    for _ in range(2):  # the second search reads the remembered list
        for s in (7, 8):
            query = f"query {WORDS[s]} here"
            hits = graph_index.search(query, top_k=12, mode="dense", filters={"s": s})
            assert [h.chunk_id for h in hits] == _exact(graph_index, query, 12, {"s": s})
    query = f"query {WORDS[7]} here"
    gone = graph_index.search(query, top_k=1, mode="dense", filters={"s": 7})[0].document_id
    graph_index.delete(gone)
    hits = graph_index.search(query, top_k=12, mode="dense", filters={"s": 7})
    assert len(hits) == 11 and gone not in {h.document_id for h in hits}
    assert [h.chunk_id for h in hits] == _exact(graph_index, query, 12, {"s": 7})


def test_kept_search_parameters_follow_each_bitmap(tmp_path: Path) -> None:
    """The graph keeps faiss's search parameters per ef and kept bitmap: each search still
    returns only the chunks its own bitmap allows, however many bitmaps come and go (more
    than the graph keeps, each made afresh) and whether the caller keeps it or not."""
    from ragloom.dense.graph import KEPT_PARAMS, AnnIndex

    rng = np.random.default_rng(7)
    vectors = normalize_rows(rng.standard_normal((3000, 16)).astype(np.float32))
    graph = AnnIndex.build(vectors, tmp_path / "g.hnsw", threads=1)
    query = vectors[11]
    assert 11 in graph.search(query, 20, None).tolist()
    for round_ in range(2 * KEPT_PARAMS + 5):
        allowed = rng.random(3000) < 0.3
        allowed[11] = round_ % 2 == 0
        kept = np.packbits(allowed, bitorder="little")
        for packed in (kept, None):
            found = graph.search(query, 20, allowed, packed=packed)
            assert len(found) == 20 and allowed[found].all()
            assert (11 in found.tolist()) == bool(allowed[11])
    assert len(graph._params) <= KEPT_PARAMS
    assert 11 in graph.search(query, 20, None, ef=200).tolist()
