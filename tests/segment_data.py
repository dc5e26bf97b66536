"""Segments built and saved for tests from per-chunk postings: the lexical kernels' and the
segment file's tests start from a few chunks written out by hand."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ragloom.segments.build import build_segment_flat
from ragloom.segments.files import write_arrays
from ragloom.segments.persist import FORMAT
from ragloom.segments.postings import Postings
from ragloom.segments.segment import Segment

# The arrays every segment file holds (beside lengths, bounds, metadata and vectors).
CORE_ARRAYS = ("rows", "terms", "ptr", "docs", "tfs", "block_ptr", "block_max_tf")


def build_segment(
    rows: Sequence[int] | np.ndarray,
    postings: Sequence[Postings],
    metadatas: Sequence[dict[str, Any]],
    vectors: np.ndarray | None = None,
    has_vector: np.ndarray | None = None,
    vector_epoch: int = 0,
) -> Segment:
    """A segment from chunks given in ascending row order."""
    counts = np.fromiter((len(p.term_ids) for p in postings), np.int64, len(postings))
    if len(postings):
        terms = np.concatenate([p.term_ids for p in postings]).astype(np.uint32)
        tfs = np.concatenate([p.tfs for p in postings]).astype(np.uint32)
    else:
        terms, tfs = np.zeros(0, np.uint32), np.zeros(0, np.uint32)
    return build_segment_flat(
        rows, terms, tfs, counts, metadatas, vectors, has_vector, vector_epoch
    )


def save_segment(segment: Segment, path: Path) -> int:
    """Write a segment file atomically; returns its size in bytes."""
    arrays = {name: getattr(segment, name) for name in CORE_ARRAYS}
    arrays["lengths"] = segment.lengths.astype(np.uint32)
    arrays["block_min_len"] = segment.block_min_len.astype(np.uint32)
    meta_arrays, meta_info = segment.columns.to_arrays()
    arrays.update(meta_arrays)
    if segment.vectors is not None:
        arrays["vectors"] = segment.vectors.astype(np.float32)
        arrays["has_vector"] = segment.has_vector.astype(np.bool_)  # type: ignore[union-attr]
    info = {"format": FORMAT, "vector_epoch": segment.vector_epoch, "metadata": meta_info}
    return write_arrays(path, arrays, info)
