"""The search graphs of a writing process (`ragloom.dense.graph`): which segment files get
one and when, and graphs carried on through merges.

Every segment file of `ANN_MIN` chunks or more gets a graph once writes pause (after
consolidation, which rewrites the small files). The files a bulk load keeps get theirs
sooner, a batch of rows at a time between the load's flushes and merges: the collection's
first file (a merge keeps its rows first) and the files of a merge tier above the first
(they stay until `factor` of them merge). A merge whose first input had a graph, finished or
under way, and kept that input whole (no deletes, no late vectors) carries the graph on:
only the rows after it are inserted. So a bulk load inserts most vectors once, while it
runs, and what a closing writer has left to do is small.
"""

from __future__ import annotations

from collections.abc import Callable

from ragloom.dense import graph as ann
from ragloom.dense.graph import attach_graph
from ragloom.segments.merge_file import Cancelled
from ragloom.segments.merge_policy import level
from ragloom.segments.view import CollectionView, Part
from ragloom.store.sqlite.database import SQLiteDatabase
from ragloom.store.sqlite.errors import from_os

Stop = Callable[[], bool]


class GraphWork:
    """Graphs under way (a batch at a time) and graphs to carry on, per segment name."""

    def __init__(self, store: SQLiteDatabase) -> None:
        self.store = store
        # segment name -> how its graph starts: a finished graph over its first rows (of the
        # input a merge kept first), or a build under way over them
        self._head_starts: dict[str, ann.AnnIndex | ann.GraphBuild] = {}

    def due(self, view: CollectionView) -> list[Part]:
        """The view's segment files that should have a graph and lack one."""
        if not ann.available():
            return []
        files = view.parts[: view.files]
        self.store.files.attached([p.segment for p in files])  # (those written already)
        return [p for p in files if _wants_graph(p)]

    def carry(self, name: str, first: Part, epoch: int) -> None:
        """After a merge into segment `name`: its first rows are `first`'s, in order, when the
        merge kept `first` whole; then its graph starts from `first`'s."""
        old = first.segment
        self.store.files.attached([old])  # (its graph, if its file has one)
        start = old.ann if old.ann is not None else self._head_starts.get(old.name)
        whole = not first.n_dead and not len(first.late_docs) and old.vector_epoch == epoch
        if start is not None and whole:
            self._head_starts = {k: v for k, v in self._head_starts.items() if v is not start}
            self._head_starts[name] = start

    def forget_gone(self, views: list[CollectionView]) -> None:
        """Drop head starts of segments no view lists any more (merged on without them)."""
        live = {p.segment.name for view in views for p in view.parts[: view.files]}
        self._head_starts = {k: v for k, v in self._head_starts.items() if k in live}

    def grow(self, view: CollectionView, factor: int, floor: int, stop: Stop) -> str | None:
        """While writes go on: one batch of rows into the graph of the first file the load
        keeps that lacks one (the collection's first file, or one above the first merge tier),
        on one thread. Returns what was done, in words (None: nothing to do)."""
        for part in self.due(view):
            if part is view.parts[0] or level(part.n_live, factor, floor) >= 1:
                return self._work(part, rows=ann.ADD_ROWS, threads=1, stop=stop)
        return None

    def build(self, view: CollectionView, stop: Stop) -> str | None:
        """Once writes pause: the whole graph of the next file that lacks one (carried on
        where it can be), on every thread. Returns what was done, in words."""
        for part in self.due(view):
            done = self._work(part, rows=None, threads=2, stop=stop)
            if done is not None:
                return done
        return None

    def _work(self, part: Part, rows: int | None, threads: int, stop: Stop) -> str | None:
        segment = part.segment
        path = self.store.files.path(segment.name)
        if attach_graph(segment, path):
            self._head_starts.pop(segment.name, None)
            return None  # another process built it
        vectors = segment.vectors
        assert vectors is not None  # (`due` lists only segments with vectors)
        start = self._head_starts.get(segment.name)
        carried = 0
        if isinstance(start, ann.GraphBuild):
            build: ann.GraphBuild | None = start
        elif start is not None:
            build = ann.GraphBuild.grown_from(start, vectors)
            carried = start.n if build is not None else 0
        else:
            build = None
        if build is None:
            build = ann.GraphBuild.start(vectors)
        self._head_starts[segment.name] = build
        try:
            whole = build.grow(vectors, rows=rows, threads=threads, stop=stop)
            if not whole:
                return f"search graph over {segment.n:,} chunks: {build.done:,} in"
            graph = build.write(ann.ann_path(path))
        except Cancelled:
            return None  # nothing was written (the graph file appears only when whole)
        except OSError as exc:
            raise from_os(exc, f"graph of segment {segment.name}") from None
        del self._head_starts[segment.name]
        if graph.n != segment.n or not attach_graph(segment, path):
            return None
        kept = f", {carried:,} of them carried on from a merged graph" if carried else ""
        return f"search graph over {segment.n:,} chunks{kept}"


def _wants_graph(part: Part) -> bool:
    segment = part.segment
    return segment.ann is None and segment.n >= ann.ANN_MIN and segment.vectors is not None
