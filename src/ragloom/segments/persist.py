"""Segments to and from files (see `ragloom.segments.files` for the layout)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ragloom.segments.columns import MetadataColumns
from ragloom.segments.files import ArrayFile, write_arrays
from ragloom.segments.segment import Segment

FORMAT = 1
_CORE = ("rows", "terms", "ptr", "docs", "tfs", "block_ptr", "block_max_tf")


def save_segment(segment: Segment, path: Path) -> int:
    """Write a segment file atomically; returns its size in bytes."""
    arrays = {name: getattr(segment, name) for name in _CORE}
    arrays["lengths"] = segment.lengths.astype(np.uint32)
    arrays["block_min_len"] = segment.block_min_len.astype(np.uint32)
    meta_arrays, meta_info = segment.columns.to_arrays()
    arrays.update(meta_arrays)
    if segment.vectors is not None:
        arrays["vectors"] = segment.vectors.astype(np.float32)
        arrays["has_vector"] = segment.has_vector.astype(np.bool_)  # type: ignore[union-attr]
    info = {"format": FORMAT, "vector_epoch": segment.vector_epoch, "metadata": meta_info}
    return write_arrays(path, arrays, info)


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
