"""Segment files' and graphs' pages are mapped ahead of the first searches
(`ragloom.segments.prefetch`): a real segment file mapped by the store's `SegmentFiles`, and a
real faiss graph file mapped by faiss, whose mappings the process's own /proc/self/smaps
shows resident once the daemon thread has populated them; nothing is done past the memory
budget, and a closed file is passed over."""

from __future__ import annotations

import mmap
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import ragloom.segments.prefetch as prefetch
from ragloom.segments.persist import SegmentFiles
from ragloom.segments.postings import Postings

from .segment_data import build_segment, save_segment

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="MADV_POPULATE_READ and smaps are Linux's"
)

CHUNKS = 3000


def _segment_file(folder: Path, name: str = "s1") -> Path:
    """A segment of 3,000 chunks with 384-d vectors (about 5 MB), saved as `name`."""
    rng = np.random.default_rng(0)
    postings = [
        Postings(np.array([i % 50, 100 + i], np.uint32), np.array([1, 2], np.uint32))
        for i in range(CHUNKS)
    ]
    vectors = rng.standard_normal((CHUNKS, 384)).astype(np.float32)
    segment = build_segment(
        np.arange(CHUNKS), postings, [{} for _ in range(CHUNKS)], vectors, np.ones(CHUNKS, bool)
    )
    folder.mkdir(exist_ok=True)
    path = folder / f"{name}.seg"
    save_segment(segment, path)
    return path


def _resident_kb(path: Path) -> int:
    """Resident kilobytes of this process's mapping of `path` (0 when not mapped)."""
    lines = Path("/proc/self/smaps").read_text().splitlines()
    resident, inside = 0, False
    for line in lines:
        fields = line.split()
        if len(fields) >= 5 and "-" in fields[0] and ":" in fields[3]:  # a mapping's header
            inside = fields[-1] == str(path)
        elif inside and fields[0] == "Rss:":
            resident += int(fields[1])
    return resident


def _wait_for(condition, seconds: float = 30.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return False


def test_a_new_files_pages_are_mapped_in_the_background(tmp_path: Path) -> None:
    path = _segment_file(tmp_path / "segments")
    files = SegmentFiles(tmp_path / "segments")
    segment = files.get("s1")
    assert prefetch.mapping_of(segment.vectors) is prefetch.mapping_of(segment.rows)
    size_kb = path.stat().st_size // 1024
    assert _wait_for(lambda: _resident_kb(path) >= 0.9 * size_kb), _resident_kb(path)


def test_nothing_is_mapped_past_the_memory_budget(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(prefetch, "available_bytes", lambda: 1024 * 1024)  # 0.5 MB budget
    path = _segment_file(tmp_path / "segments")
    files = SegmentFiles(tmp_path / "segments")
    files._prefetch = prefetch.Prefetcher()  # (the process's own has its budget already)
    segment = files.get("s1")
    time.sleep(0.5)
    assert _resident_kb(path) < path.stat().st_size // 1024 // 2
    assert segment.rows[-1] == CHUNKS - 1  # the file reads as usual, page by page


def test_a_closed_file_is_passed_over(tmp_path: Path) -> None:
    path = _segment_file(tmp_path / "segments")
    worker = prefetch.Prefetcher()
    with open(path, "rb") as handle:
        mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    mapped.close()
    worker.add(mapped)  # passed over quietly: the next file is populated as usual
    files = SegmentFiles(tmp_path / "segments")
    files._prefetch = worker
    files.get("s1")
    assert _wait_for(lambda: _resident_kb(path) >= 0.9 * (path.stat().st_size // 1024))
    assert prefetch.mapping_of(np.zeros(3)) is None  # an array in memory has no file


def test_a_graphs_vectors_and_links_are_mapped_in_the_background(tmp_path: Path) -> None:
    """faiss maps the graph file itself: its 8-bit vectors and links are populated too."""
    ann = pytest.importorskip("ragloom.dense.graph")
    pytest.importorskip("faiss")
    vectors = np.random.default_rng(1).standard_normal((8000, 256)).astype(np.float32)
    path = tmp_path / "g.hnsw"
    ann.AnnIndex.build(vectors, path, threads=1)  # (loads it: populated once)
    graph = ann.AnnIndex.load(path)  # a second mapping of the file, populated again
    size_kb = path.stat().st_size // 1024
    # (faiss itself reads about a third of this file at load; the rest is the prefetch's)
    assert _wait_for(lambda: _resident_kb(path) >= 0.9 * size_kb), (_resident_kb(path), size_kb)
    assert len(graph.search(vectors[0], 5, None)) == 5
