"""Approximate nearest neighbours for large segments: an HNSW graph (faiss) over 8-bit
scalar-quantized copies of the vectors, searched with the segment's filter as a bitmap and
re-scored exactly with the float32 vectors, so returned scores are true cosines.

Why faiss (bench/scale.py measures it): it filters inside C++ through an id bitmap (hnswlib
filters through a Python callback, usearch not at all from Python), its 8-bit storage keeps the
graph file small beside the float32 vectors, and `IO_FLAG_MMAP_IFC` searches the file in place:
opening costs no copy and the graph lives in the page cache, not in the process's anonymous
memory (at 1M chunks, 520 MB of graphs used to be read and copied at every open). It
cannot delete, which segments never need: deleted chunks are masked out, and merges rebuild.
The graph is derived data: missing or damaged, the segment is searched exactly.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ragloom.segments import prefetch
from ragloom.segments.files import fsync_folder
from ragloom.segments.merge_file import Cancelled
from ragloom.segments.segment import Segment

log = logging.getLogger("ragloom.store")

ANN_MIN = int(os.environ.get("RAGLOOM_ANN_MIN", "20000"))  # segments this large get a graph
M = 16
EF_CONSTRUCTION = 64
EF_SEARCH = 128
TRAIN = 50_000
ADD_ROWS = 8_192  # between batches a closing process can stop the build
SEED_OUTSIDE = 0.01  # share of new values outside a seed's quantizer range: build afresh
KEPT_PARAMS = 32  # search parameters kept per graph (per ef and allowed-chunks bitmap)


def _read_flags() -> int:
    """Map the graph file and search it in place (read-only); an older faiss without
    in-place mapping maps what it can and copies the rest."""
    import faiss

    return getattr(faiss, "IO_FLAG_MMAP_IFC", faiss.IO_FLAG_MMAP) | faiss.IO_FLAG_READ_ONLY


def available() -> bool:
    try:
        import faiss  # noqa: F401
    except ImportError:
        return False
    return True


def ann_path(segment_path: Path) -> Path:
    return segment_path.with_suffix(".hnsw")


class AnnIndex:
    """A faiss HNSW index whose ids are a segment's chunk numbers."""

    def __init__(self, index: Any, n: int, path: Path | None = None) -> None:
        self.index = index  # a faiss.IndexHNSWSQ
        self.n = n
        self.path = path  # the file it was read from
        # (ef, id of the kept bitmap or None) -> (the bitmap, faiss's selector and search
        # parameters): built once, not per query (faiss's objects cost 10-20 us to make). The
        # entry holds the bitmap (no other array can take its id meanwhile) and the selector
        # the parameters point to.
        self._params: dict[tuple[int, int | None], tuple[Any, Any, Any]] = {}

    @classmethod
    def build(
        cls,
        vectors: np.ndarray,
        path: Path,
        threads: int = 2,
        stop: Callable[[], bool] | None = None,
        seed: AnnIndex | None = None,
    ) -> AnnIndex:
        """Build from a (memory-mapped) matrix, write it atomically to `path`. Raises
        `Cancelled` between batches once `stop()` is true (nothing is written then). With
        a `seed` (a graph over the same first rows, `GraphBuild.grown_from`), only the rows
        after them are inserted."""
        build = GraphBuild.grown_from(seed, vectors) if seed is not None else None
        build = build or GraphBuild.start(vectors)
        build.grow(vectors, threads=threads, stop=stop)
        return build.write(path)

    @classmethod
    def load(cls, path: Path) -> AnnIndex:
        import faiss

        index = faiss.read_index(str(path), _read_flags())
        graph = cls(index, int(index.ntotal), path)
        hnsw: Any = index  # (faiss's stubs lack the HNSW fields)
        storage: Any = faiss.downcast_index(hnsw.storage)
        for mapped in (storage.codes, hnsw.hnsw.neighbors):
            if mapped.size():  # the file's 8-bit vectors and links, mapped ahead of searches
                prefetch.SHARED.add(faiss.rev_swig_ptr(mapped.data(), mapped.size()), graph)
        return graph

    def search(
        self,
        query: np.ndarray,
        k: int,
        allowed: np.ndarray | None,
        ef: int | None = None,
        packed: np.ndarray | None = None,
    ) -> np.ndarray:
        """Up to `k` chunk numbers among `allowed` (bool per chunk; None: every chunk, and
        no selector to consult), nearest first. `packed` is `allowed` already packed
        (`np.packbits(allowed, bitorder="little")`), for a caller that keeps it."""
        ef = max(ef or EF_SEARCH, k)
        if allowed is None:
            params = self._search_params(ef, None)
        elif packed is None:  # a bitmap made for this call: parameters for it alone
            selection = self._made_params(ef, np.packbits(allowed, bitorder="little"))
            params = selection[2]
        else:
            params = self._search_params(ef, packed)
        _, ids = self.index.search(np.asarray(query, np.float32).reshape(1, -1), k, params=params)
        found = ids[0]
        return found[found >= 0].astype(np.int64)

    def _search_params(self, ef: int, packed: np.ndarray | None) -> Any:
        """faiss's search parameters for `ef` and a bitmap the caller keeps (None: no
        selector), made once."""
        key = (ef, None if packed is None else id(packed))
        kept = self._params.get(key)
        if kept is None or kept[0] is not packed:
            if len(self._params) >= KEPT_PARAMS:
                self._params.clear()
            kept = self._params[key] = self._made_params(ef, packed)
        return kept[2]

    def _made_params(self, ef: int, packed: np.ndarray | None) -> tuple[Any, Any, Any]:
        """(bitmap, selector, parameters), to be held together while searching: the
        parameters point to the selector and the selector to the bitmap in C++ only."""
        import faiss

        params = faiss.SearchParametersHNSW()  # type: ignore[attr-defined]  # (not in faiss's stubs)
        params.efSearch = ef
        selector = None
        if packed is not None:
            selector = faiss.IDSelectorBitmap(self.n, faiss.swig_ptr(packed))
            params.sel = selector
        return packed, selector, params


class GraphBuild:
    """A graph under construction over the first `done` rows of a segment's vectors. HNSW
    grows by insertion, so a graph over a segment's leading rows (the graph of the first
    segment a merge kept whole) is carried on by inserting the rest: the graph a build
    inserting in that order makes, at the cost of the new rows only."""

    def __init__(self, index: Any, done: int) -> None:
        self.index = index  # a faiss.IndexHNSWSQ in memory
        self.done = done

    @classmethod
    def start(cls, vectors: np.ndarray) -> GraphBuild:
        """An empty graph whose 8-bit quantizer is trained on a sample of `vectors`."""
        import faiss

        dimension = vectors.shape[1]
        index = faiss.IndexHNSWSQ(  # faiss's stubs lack this overload
            dimension,
            faiss.ScalarQuantizer.QT_8bit,  # type: ignore[arg-type]
            M,
            faiss.METRIC_INNER_PRODUCT,
        )
        index.hnsw.efConstruction = EF_CONSTRUCTION
        step = max(1, len(vectors) // TRAIN)
        index.train(np.ascontiguousarray(vectors[::step][:TRAIN], np.float32))
        return cls(index, 0)

    @classmethod
    def grown_from(cls, seed: AnnIndex, vectors: np.ndarray) -> GraphBuild | None:
        """`seed`'s graph read into memory, to be carried on over `vectors` (whose first
        `seed.n` rows it holds); None when its file is gone or the new rows fall outside
        the range its quantizer was trained on (then a fresh build codes them better)."""
        import faiss

        if seed.path is None or seed.n > len(vectors) or not seed.path.exists():
            return None
        index: Any = faiss.read_index(str(seed.path))  # in memory: a mapped one cannot grow
        if int(index.ntotal) != seed.n:
            return None
        codes: Any = faiss.downcast_index(index.storage)  # the 8-bit storage
        trained = faiss.vector_to_array(codes.sq.trained)  # each dimension's low, then span
        low, span = trained[: vectors.shape[1]], trained[vectors.shape[1] :]
        sample = np.asarray(vectors[seed.n :: max(1, (len(vectors) - seed.n) // 2000)])
        outside = (sample < low) | (sample > low + span)
        if len(sample) and outside.mean() > SEED_OUTSIDE:
            return None
        return cls(index, seed.n)

    def grow(
        self,
        vectors: np.ndarray,
        rows: int | None = None,
        threads: int = 2,
        stop: Callable[[], bool] | None = None,
    ) -> bool:
        """Insert up to `rows` more of `vectors` (every one left when None), a batch at a
        time; raises `Cancelled` between batches once `stop()` is true. True when every row
        is in."""
        import faiss

        faiss.omp_set_num_threads(threads)
        end = len(vectors) if rows is None else min(len(vectors), self.done + rows)
        while self.done < end:
            if stop is not None and stop():
                raise Cancelled
            upto = min(end, self.done + ADD_ROWS)
            self.index.add(np.ascontiguousarray(vectors[self.done : upto], np.float32))
            self.done = upto
        return self.done == len(vectors)

    def write(self, path: Path) -> AnnIndex:
        """Write the graph atomically and durably to `path`; returns it mapped from there."""
        import faiss

        tmp = path.with_name(path.name + ".tmp")
        try:
            faiss.write_index(self.index, str(tmp))
            with open(tmp, "rb") as handle:
                os.fsync(handle.fileno())
            os.replace(tmp, path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        fsync_folder(path.parent)  # the rename, too, survives a crash
        return AnnIndex.load(path)


def attach_graph(segment: Segment, path: Path) -> bool:
    """Give a segment its approximate-search graph if its file exists and reads well."""
    graph = ann_path(path)
    if segment.ann is not None or not graph.exists() or not available():
        return segment.ann is not None
    try:
        index = AnnIndex.load(graph)
    except Exception as exc:  # derived data: a damaged graph means exact search
        log.warning("ignoring damaged graph %s (%s); run `ragloom check --repair`", graph, exc)
        return False
    if index.n != segment.n:
        log.warning("ignoring stale graph %s; run `ragloom check --repair`", graph)
        return False
    object.__setattr__(segment, "ann", index)  # a cache beside immutable data
    return True
