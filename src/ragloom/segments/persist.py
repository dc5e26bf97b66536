"""Segments to and from files (see `ragloom.segments.files` for the layout), and the files of
one index mapped once and shared by every view that uses them."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from ragloom.segments import prefetch
from ragloom.segments.columns import MetadataColumns
from ragloom.segments.files import ArrayFile
from ragloom.segments.segment import Segment

FORMAT = 1


def load_segment(path: Path, name: str) -> Segment:
    """Map a segment file; raises ValueError (or OSError) when it is missing or damaged."""
    file = ArrayFile(path)
    if file.info.get("format") != FORMAT:
        raise ValueError(f"{path}: unknown segment format {file.info.get('format')!r}")
    a = file.arrays
    return Segment(
        rows=a["rows"],
        lengths=a["lengths"].astype(np.float64),
        terms=a["terms"],
        ptr=a["ptr"],
        docs=a["docs"],
        tfs=a["tfs"],
        block_ptr=a["block_ptr"],
        block_max_tf=a["block_max_tf"],
        block_min_len=a["block_min_len"].astype(np.float64),
        columns=MetadataColumns.from_arrays(a, file.info["metadata"]),
        vectors=a.get("vectors"),
        has_vector=a.get("has_vector"),
        vector_epoch=int(file.info.get("vector_epoch", 0)),
        name=name,
    )


class SegmentMissing(Exception):
    """A segment file listed in the snapshot's manifest is gone (merged away meanwhile)."""


class SegmentFiles:
    """Segment files of one index, mapped once and shared by every view that uses them; a
    daemon thread maps each new file's pages ahead of the searches (`prefetch`).

    `attach(segment, path)` gives a file's segment what only some readers need (the store
    gives segments their approximate-search graphs there, `ragloom.dense.graph.attach_graph`):
    it runs once for each file, when a reader first asks for it (`attached`), so that a
    lexical search never reads a graph file nor imports faiss."""

    def __init__(
        self, folder: Path, attach: Callable[[Segment, Path], object] | None = None
    ) -> None:
        self.folder = folder
        self.attach = attach
        self._loaded: dict[str, Segment] = {}
        self._attached: set[str] = set()  # names of the segments `attach` has run for
        self._lock = threading.Lock()
        self._attach_lock = threading.Lock()
        self._prefetch = prefetch.SHARED

    def path(self, name: str) -> Path:
        return self.folder / f"{name}.seg"

    def get(self, name: str) -> Segment:
        segment = self._loaded.get(name)
        if segment is not None:
            return segment
        try:
            segment = load_segment(self.path(name), name)
        except FileNotFoundError:
            raise SegmentMissing(name) from None
        with self._lock:
            kept = self._loaded.setdefault(name, segment)
        if kept is segment:
            self._prefetch.add(prefetch.mapping_of(segment.rows))
        return kept

    def attached(self, segments: Sequence[Segment]) -> None:
        """Run `attach` for each of these segments it has not run for yet (once a file: a
        graph another process writes later is not looked for again)."""
        if self.attach is None or all(s.name in self._attached for s in segments):
            return
        with self._attach_lock:
            for segment in segments:
                if segment.name not in self._attached:
                    self.attach(segment, self.path(segment.name))
                    self._attached.add(segment.name)

    def add(self, segment: Segment) -> None:
        with self._lock:
            self._loaded[segment.name] = segment

    def forget(self, names: Sequence[str]) -> None:
        with self._lock:
            for name in names:
                self._loaded.pop(name, None)
                self._attached.discard(name)
