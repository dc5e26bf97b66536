"""Nobody has to ask for the steady state (issues 23 and 48): a process that wrote finishes
the flushes, merges and graphs its writes made due before `close()` returns (the graphs of
the files a bulk load keeps grow while it runs; a merge carries its first file's graph on);
an index left with pending work (`close(finish=False)`, a killed process) is finished by the
next process that keeps it open, in the background and without blocking its searches;
`close()` gives up a step midway without leaving half of it; `ragloom index` finishes the
work before it exits. Real SQLite files, real segment files and faiss graphs, the real
command line in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import ragloom.dense.graph as ann
import ragloom.store.sqlite.maintenance as maintenance
import ragloom.store.sqlite.segment_swap as segment_swap
from ragloom import Document, Index
from ragloom.embedding.base import Embedder, normalize_rows

from .embed_server import EmbedServer

pytest.importorskip("faiss")

CHUNKS = 1200


class Topics(Embedder):
    """Vectors with neighbour structure: one direction per topic word, plus a little noise."""

    name = "test-topics"
    dimension = 16

    def _embed_batch(self, texts):
        out = []
        for text in texts:
            words = text.split()
            topic = words[1] if len(words) > 1 else text
            base = np.random.default_rng(sum(map(ord, topic))).standard_normal(self.dimension)
            noise = np.random.default_rng(sum(map(ord, text)) * 7).standard_normal(self.dimension)
            out.append(base + 0.3 * noise)
        return normalize_rows(np.array(out, np.float32))


def _docs() -> list[Document]:
    return [
        Document(f"d{i}", f"doc topic{i % 30} word{i % 97} number{i}", metadata={"g": i % 10})
        for i in range(CHUNKS)
    ]


@pytest.fixture
def small_segments(monkeypatch):
    """Flushes every 200 chunks, merges 3 at a time, graphs over 400 chunks or more; the
    background resumes 0.1 s after open, consolidation and graphs 0.2 s after the last write."""
    monkeypatch.setattr(maintenance, "FLUSH_ROWS", 200)
    monkeypatch.setattr(maintenance, "MERGE_FACTOR", 3)
    monkeypatch.setattr(maintenance, "RESUME_AFTER", 0.1)
    monkeypatch.setattr(maintenance, "GRAPH_AFTER", 0.2)
    monkeypatch.setattr(ann, "ANN_MIN", 400)


def _build_without_background(path: Path, monkeypatch) -> list:
    """What a script killed before close, or one that hands the work on, leaves behind:
    every chunk added, nothing flushed, merged or graphed. Returns the answers of a few
    lexical searches on it (read-only: nothing resumed)."""
    monkeypatch.setenv("RAGLOOM_BACKGROUND", "0")
    index = Index(path, embedder=Topics())
    docs = _docs()
    for lo in range(0, CHUNKS, 100):
        index.add(docs[lo : lo + 100])
    index.close(finish=False)
    monkeypatch.setenv("RAGLOOM_BACKGROUND", "1")
    with Index(path, embedder=Topics(), read_only=True) as reader:
        assert _segments(reader) == {"files": 0, "memory": 1, "graphs": 0}
        return _answers(reader)


def _segments(index: Index) -> dict:
    return index.stats()["collections"]["default"]["segments"]


def _files(path: Path) -> set[str]:
    folder = path.with_name(path.name + "-segments")
    return {f.name for f in folder.iterdir()} if folder.exists() else set()


def _wait_for(condition, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "background work did not finish"
        time.sleep(0.05)


def _answers(index: Index) -> list:
    out = []
    for query in ("topic3 word5", "number17 topic17", "word42"):
        hits = index.search(query, top_k=10, mode="lexical")
        out.append([(h.chunk_id, round(h.score, 9)) for h in hits])
    return out


def test_an_opener_resumes_pending_work_without_blocking_searches(
    tmp_path: Path, monkeypatch, small_segments
) -> None:
    path = tmp_path / "idx.db"
    expected = _build_without_background(path, monkeypatch)

    real_merge = segment_swap.merge_to_file
    inside, release = threading.Event(), threading.Event()

    def slow_merge(*args, **kwargs):
        inside.set()
        assert release.wait(30)
        return real_merge(*args, **kwargs)

    monkeypatch.setattr(segment_swap, "merge_to_file", slow_merge)
    index = Index(path, embedder=Topics())
    try:
        assert inside.wait(30), "the opener did not resume the pending flushes"
        # A flush is under way in the background: searches answer meanwhile, from the
        # version that was committed, with the same results.
        assert _answers(index) == expected
        assert index.search("topic4", top_k=3, mode="dense")
        release.set()
        _wait_for(lambda: _segments(index)["graphs"] >= 1 and _segments(index)["memory"] <= 1)
        after = _segments(index)
        # Flushed in 200s, merged 3 at a time, then (writes having paused) consolidated:
        # one segment file with one graph, nothing left to do.
        assert after == {"files": 1, "memory": 0, "graphs": 1}
        assert index.store.maintenance.outstanding() == []
        assert not index.store.maintenance.deferred
        assert _answers(index) == expected  # exact BM25: the same hits and scores
        assert index.check() == []
    finally:
        release.set()
        index.close()


def test_close_gives_up_a_merge_midway_and_the_next_opener_does_it(
    tmp_path: Path, monkeypatch, small_segments
) -> None:
    path = tmp_path / "idx.db"
    expected = _build_without_background(path, monkeypatch)

    real_merge = segment_swap.merge_to_file
    inside = threading.Event()
    work = maintenance.Maintenance

    def merge_until_closed(parts, epoch, dimension, out_path, stop):
        inside.set()
        while not stop():  # the merge is still running when close() is called
            time.sleep(0.01)
        out_path.write_bytes(b"half a segment")  # what an interrupted writer leaves
        return real_merge(parts, epoch, dimension, out_path, stop=stop)

    monkeypatch.setattr(segment_swap, "merge_to_file", merge_until_closed)
    index = Index(path, embedder=Topics())
    assert isinstance(index.store.maintenance, work)
    assert inside.wait(30)
    started = time.monotonic()
    index.close()
    assert time.monotonic() - started < 10  # close did not wait for the whole merge
    # Nothing half-done: no segment committed, no file left behind, the index intact.
    with Index(path, embedder=Topics(), read_only=True) as reader:
        assert _segments(reader)["files"] == 0
        assert _files(path) == set()
        assert reader.check() == []
        assert _answers(reader) == expected

    monkeypatch.setattr(segment_swap, "merge_to_file", real_merge)
    with Index(path, embedder=Topics()) as index:
        _wait_for(lambda: _segments(index)["graphs"] >= 1 and _segments(index)["memory"] <= 1)
        assert _answers(index) == expected
        assert index.check() == []


def test_close_gives_up_a_graph_midway(tmp_path: Path, monkeypatch, small_segments) -> None:
    path = tmp_path / "idx.db"
    _build_without_background(path, monkeypatch)
    real_grow = ann.GraphBuild.grow
    inside = threading.Event()

    def grow_until_closed(self, vectors, rows=None, threads=2, stop=None):
        inside.set()
        while not stop():
            time.sleep(0.01)
        return real_grow(self, vectors, rows, threads, stop)

    monkeypatch.setattr(ann.GraphBuild, "grow", grow_until_closed)
    index = Index(path, embedder=Topics())
    assert inside.wait(60)
    index.close()
    assert not [name for name in _files(path) if ".hnsw" in name]  # no graph, whole or half
    monkeypatch.setattr(ann.GraphBuild, "grow", real_grow)
    with Index(path, embedder=Topics()) as index:
        _wait_for(lambda: _segments(index)["graphs"] >= 1)
        assert index.check() == []


def test_a_short_opener_starts_nothing(tmp_path: Path, monkeypatch, small_segments) -> None:
    monkeypatch.setattr(maintenance, "RESUME_AFTER", 30.0)
    path = tmp_path / "idx.db"
    _build_without_background(path, monkeypatch)
    with Index(path, embedder=Topics()) as index:
        assert index.search("topic3", top_k=3, mode="lexical")
    assert _files(path) == set()


def test_ragloom_index_leaves_the_steady_state(tmp_path: Path) -> None:
    records = tmp_path / "records.jsonl"
    records.write_text("".join(json.dumps({"id": d.id, "text": d.text}) + "\n" for d in _docs()))
    path = tmp_path / "cli.db"
    env = {
        **os.environ,
        "RAGLOOM_FLUSH_ROWS": "200",
        "RAGLOOM_MERGE_FACTOR": "3",
        "RAGLOOM_ANN_MIN": "400",
        "RAGLOOM_GRAPH_AFTER": "30",  # never idle long enough inside the command
    }
    with EmbedServer() as server:
        done = subprocess.run(
            [sys.executable, "-m", "ragloom", "--index", str(path)]
            + ["--embedder", f"ollama:m@{server.url}", "index", str(records)],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
    assert done.returncode == 0, done.stderr
    assert f"{CHUNKS} chunk(s)" in done.stdout
    with Index(path, embedder=None, read_only=True) as index:
        with index.store.snapshot() as snap:
            view = snap.collection("default").view
        files = view.parts[: view.files]
        memory = view.parts[view.files :]
        assert files and sum(p.segment.n for p in memory) < 200  # flushed
        assert len(files) == 1  # merged, then the small files consolidated into one
        big = [p for p in files if p.segment.n >= 400]
        assert big  # and each has its graph, built by the command (mapped by the stats):
        assert index.stats()["collections"]["default"]["segments"]["graphs"] == len(big)


def test_a_slow_bulk_load_never_looks_idle(tmp_path: Path, monkeypatch, small_segments) -> None:
    """Embedding a batch takes longer than the idle wait: consolidation still waits for the
    end of `Index.add` (it would rewrite files while it runs), then happens. The graphs of
    the files the load keeps (the first one, those above the first merge tier) grow while it
    runs, a batch at a time, and consolidation carries the first one's graph on: most
    vectors are inserted once."""
    import ragloom.engine.ingest as ingest

    monkeypatch.setattr(maintenance, "GRAPH_AFTER", 0.2)
    monkeypatch.setattr(ingest, "WRITE_BATCH", 100)

    class Slow(Topics):
        batch_size = 1000

        def _embed_batch(self, texts):
            time.sleep(0.4)
            return super()._embed_batch(texts)

    loading = threading.Event()
    during = _record_idle_work(monkeypatch, loading)
    inserted = _count_inserted(monkeypatch)
    with Index(tmp_path / "idx.db", embedder=Slow()) as index:
        loading.set()
        index.add(_docs())
        loading.clear()
        assert _segments(index)["files"] >= 2  # flushed and merged while loading...
        assert during == []  # ...but nothing that waits for a pause
        assert _segments(index)["graphs"] >= 1  # the first 600-chunk file's, grown meanwhile
        _wait_for(lambda: not index.store.maintenance.outstanding())
        after = _segments(index)
        assert (after["files"], after["graphs"]) == (1, 1)  # then consolidated, graphed
        # Two files of 600 consolidated: the first one's graph carried on, the second's
        # (grown during the load, or not yet) thrown away; never the whole rebuilt.
        assert CHUNKS <= sum(inserted) <= 1.5 * CHUNKS


def _count_inserted(monkeypatch) -> list[int]:
    """Rows inserted into graphs, per `GraphBuild.grow` call."""
    counts: list[int] = []
    real = ann.GraphBuild.grow

    def grow(self, vectors, rows=None, threads=2, stop=None):
        before = self.done
        try:
            return real(self, vectors, rows, threads, stop)
        finally:
            counts.append(self.done - before)

    monkeypatch.setattr(ann.GraphBuild, "grow", grow)
    return counts


def _record_idle_work(monkeypatch, loading: threading.Event) -> list[str]:
    """Consolidations and graph builds done while `loading` is set, in order."""
    during: list[str] = []
    real_consolidate = maintenance.Maintenance._consolidate
    real_graph = maintenance.Maintenance._build_graph

    def consolidate(self, view):
        done = real_consolidate(self, view)
        if done and loading.is_set():
            during.append("consolidated")
        return done

    def graph(self, view):
        done = real_graph(self, view)
        if done and loading.is_set():
            during.append("graph")
        return done

    monkeypatch.setattr(maintenance.Maintenance, "_consolidate", consolidate)
    monkeypatch.setattr(maintenance.Maintenance, "_build_graph", graph)
    return during


def test_a_script_pausing_between_adds_gets_no_rewrite_under_its_ingest(
    tmp_path: Path, monkeypatch, small_segments
) -> None:
    """A script opens an index with pending work, prepares its first batch for longer than the
    resume wait, then adds batches with pauses shorter than the idle wait: the pending flush
    and merges happen, but consolidation (a rewrite of every small segment) and the graphs
    of files it would rewrite wait until the script has stopped writing for the idle wait,
    counted from open or the last write, whichever is later; then they happen without anyone
    asking."""
    monkeypatch.setattr(maintenance, "GRAPH_AFTER", 3.0)
    path = tmp_path / "idx.db"
    _build_without_background(path, monkeypatch)
    loading = threading.Event()
    during = _record_idle_work(monkeypatch, loading)
    more = [Document(f"e{i}", f"more topic{i % 30} word{i % 89} extra{i}") for i in range(600)]
    with Index(path, embedder=Topics()) as index:
        loading.set()
        time.sleep(1.0)  # preparing the first batch (the resume wait is 0.1 s)
        for lo in range(0, 600, 200):
            index.add(more[lo : lo + 200])
            time.sleep(1.0)  # preparing the next one
        loading.clear()
        assert _segments(index)["files"] >= 2  # the pending flush happened meanwhile
        assert during == []  # no consolidation nor graph under the ingest
        _wait_for(lambda: not index.store.maintenance.outstanding())
        after = _segments(index)
        assert (after["files"], after["graphs"]) == (1, 1)
        assert index.check() == []


def test_the_idle_wait_before_rewrites_is_long_by_default() -> None:
    """Consolidation and graphs wait for 10 s or more without writes unless told otherwise:
    a script's pauses between batches (reading, embedding elsewhere) are seldom that long."""
    env = {k: v for k, v in os.environ.items() if k != "RAGLOOM_GRAPH_AFTER"}
    code = "import ragloom.store.sqlite.maintenance as m; print(m.GRAPH_AFTER)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert float(out.stdout) >= 10.0


def test_a_bulk_loads_tail_below_a_flush_is_written_once_writes_pause(
    tmp_path: Path, small_segments
) -> None:
    """A load that ends between flushes leaves its last chunks in memory: once writes pause
    they are written and merged like the rest (every opener would otherwise rebuild them
    from their rows and search them without a graph); a trickle of a few writes is not."""
    with Index(tmp_path / "tail.db", embedder=Topics()) as index:
        index.add(_docs())
        _wait_for(lambda: index.store.maintenance.outstanding() == [])
        assert _segments(index) == {"files": 1, "memory": 0, "graphs": 1}
        tail = [Document(f"t{i}", f"doc topic{i % 30} tail{i} number{i}") for i in range(130)]
        index.add(tail[:100])
        index.add(tail[100:])  # 130 chunks: under a flush (200), over a quarter of one
        _wait_for(lambda: index.store.maintenance.outstanding() == [])
        assert _segments(index) == {"files": 1, "memory": 0, "graphs": 1}
        index.add([Document(f"w{i}", f"doc topic{i} late{i}") for i in range(20)])
        time.sleep(1.0)  # writes paused longer than the idle wait (0.2 s)
        assert index.store.maintenance.outstanding() == []
        assert _segments(index) == {"files": 1, "memory": 1, "graphs": 1}
        assert index.search("tail129", top_k=1, mode="lexical")[0].document_id == "t129"
        assert index.check() == []


def _build(path: Path, count: int = CHUNKS, **close) -> None:
    """A script's bulk load: batches of 100, then close (by default finishing the work)."""
    index = Index(path, embedder=Topics())
    docs = _docs()[:count]
    for lo in range(0, count, 100):
        index.add(docs[lo : lo + 100])
    index.close(**close)


def test_a_builder_leaves_the_steady_state_at_close(
    tmp_path: Path, monkeypatch, small_segments
) -> None:
    """A script that adds and closes leaves every chunk in a segment file, the small files
    consolidated, the graph built and the fusion profile taken: the next opener has nothing
    left to do and searches at full speed from its first query. Close reports each step."""
    from ragloom.engine.calibration import needs_profile

    monkeypatch.setattr(maintenance, "GRAPH_AFTER", 30.0)  # never idle inside the script
    expected = _build_without_background(tmp_path / "reference.db", monkeypatch)
    path = tmp_path / "idx.db"
    steps: list[tuple[int, str]] = []
    _build(path, on_step=lambda done, what: steps.append((done, what)))
    assert [done for done, _ in steps] == list(range(1, len(steps) + 1))
    assert any("search graph" in what for _, what in steps), steps
    with Index(path, embedder=Topics(), read_only=True) as reader:
        assert _segments(reader) == {"files": 1, "memory": 0, "graphs": 1}
        assert _answers(reader) == expected  # exact BM25: the same hits and scores
        assert reader.check() == []
        with reader.store.snapshot() as snap:
            collection = snap.collection("default")
            assert not needs_profile(collection.config, collection.size())
    with Index(path, embedder=Topics()) as index:
        assert index.store.maintenance.outstanding() == []


def test_close_without_finishing_hands_the_work_on(
    tmp_path: Path, monkeypatch, small_segments
) -> None:
    """`close(finish=False)`, and an error on the way out of `with`, leave the due work to
    the next writable opener; a process that only searched has none to finish."""
    monkeypatch.setattr(maintenance, "GRAPH_AFTER", 30.0)
    path = tmp_path / "idx.db"
    _build(path, finish=False)
    with Index(path, embedder=Topics(), read_only=True) as reader:
        assert _segments(reader)["graphs"] == 0
    with pytest.raises(RuntimeError), Index(path, embedder=Topics()) as index:
        index.add([Document("late", "doc topic1 late")])
        raise RuntimeError("the script failed")
    with Index(path, embedder=Topics()) as index:
        assert index.store.maintenance.outstanding()
        assert index.search("topic3", top_k=3, mode="dense")
    with Index(path, embedder=Topics(), read_only=True) as reader:
        assert _segments(reader)["graphs"] == 0


def _record_carried(monkeypatch) -> list[tuple[int, int, bool]]:
    """(seed rows, rows, carried on) for every graph a merge offered to carry on."""
    carried: list[tuple[int, int, bool]] = []
    real = ann.GraphBuild.grown_from.__func__

    def grown_from(cls, seed, vectors):
        build = real(cls, seed, vectors)
        carried.append((seed.n, len(vectors), build is not None))
        return build

    monkeypatch.setattr(ann.GraphBuild, "grown_from", classmethod(grown_from))
    return carried


def _dense_ids(index: Index, queries: list[str]) -> list[list[str]]:
    return [[h.chunk_id for h in index.search(q, top_k=10, mode="dense")] for q in queries]


def test_a_merge_carries_the_first_segments_graph_on(
    tmp_path: Path, monkeypatch, small_segments
) -> None:
    """New chunks consolidated into a segment that has a graph: the merged segment's graph
    is the old one with the new rows inserted (none built again), and dense search through
    it finds what an exact scan finds."""
    import ragloom.dense.cosine_search as cosine_search

    monkeypatch.setattr(maintenance, "GRAPH_AFTER", 30.0)
    monkeypatch.setattr(cosine_search, "EXACT_BELOW", 0)  # through the graph at this size
    path = tmp_path / "idx.db"
    _build(path, 900)
    carried = _record_carried(monkeypatch)
    with Index(path, embedder=Topics()) as index:
        index.add(_docs()[900:])  # 300 more: a flush and a tail, then consolidated at close
    assert carried == [(900, CHUNKS, True)]
    queries = [f"doc topic{t} word{t * 7}" for t in range(0, 30, 3)]
    with Index(path, embedder=Topics(), read_only=True) as reader:
        assert _segments(reader) == {"files": 1, "memory": 0, "graphs": 1}
        assert reader.check() == []
        through_graph = _dense_ids(reader, queries)
        monkeypatch.setattr(cosine_search, "EXACT_BELOW", 10**9)
        exact = _dense_ids(reader, queries)
    found = sum(len(set(a) & set(b)) for a, b in zip(through_graph, exact))
    assert found >= 0.95 * sum(len(b) for b in exact)


def test_a_segment_with_deletes_gets_a_fresh_graph(
    tmp_path: Path, monkeypatch, small_segments
) -> None:
    """A first segment that lost chunks is renumbered by the merge: its graph is not carried
    on, a new one is built."""
    monkeypatch.setattr(maintenance, "GRAPH_AFTER", 30.0)
    path = tmp_path / "idx.db"
    _build(path, 900)
    carried = _record_carried(monkeypatch)
    with Index(path, embedder=Topics()) as index:
        index.delete("d5")
        index.add(_docs()[900:])
    assert carried == []
    with Index(path, embedder=Topics(), read_only=True) as reader:
        assert _segments(reader) == {"files": 1, "memory": 0, "graphs": 1}
        assert reader.check() == []


def test_an_interrupted_close_leaves_the_old_state_whole(
    tmp_path: Path, monkeypatch, small_segments
) -> None:
    """Ctrl-C while close finishes the work (here in the graph build): the store still
    closes, nothing half-written stays, and the next opener does the rest."""
    monkeypatch.setattr(maintenance, "GRAPH_AFTER", 30.0)
    expected = _build_without_background(tmp_path / "reference.db", monkeypatch)
    path = tmp_path / "idx.db"

    def interrupted(self, vectors, rows=None, threads=2, stop=None):
        raise KeyboardInterrupt

    real_grow = ann.GraphBuild.grow
    monkeypatch.setattr(ann.GraphBuild, "grow", interrupted)
    with pytest.raises(KeyboardInterrupt):
        _build(path)
    monkeypatch.setattr(ann.GraphBuild, "grow", real_grow)
    with Index(path, embedder=Topics(), read_only=True) as reader:
        assert _segments(reader)["graphs"] == 0
        assert not [name for name in _files(path) if ".hnsw" in name or ".tmp" in name]
        assert reader.check() == []
        assert _answers(reader) == expected
    with Index(path, embedder=Topics()) as index:
        assert index.store.maintenance.finish() == 0  # this process wrote nothing
    _build(path, 100)  # unchanged documents: nothing written, nothing finished
    with Index(path, embedder=Topics()) as index:
        index.add([Document("new", "doc topic2 new words")])  # a write: close finishes
    with Index(path, embedder=Topics(), read_only=True) as reader:
        assert _segments(reader)["graphs"] == 1
        assert reader.check() == []
