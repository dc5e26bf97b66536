"""Merging segments straight into a segment file, in memory bounded by the output's postings.

Postings are moved, not sorted: each term's live postings are laid out input after input
(inputs come in row order, so chunk numbers stay ascending), by computing every posting's
destination from per-term counts. Vectors are copied from the inputs (memory-mapped) into the
file in blocks, so merging a million 384-d vectors never holds 1.5 GB in memory.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np

from ragloom.segments.columns import MetadataColumns
from ragloom.segments.files import Blocks, write_arrays
from ragloom.segments.persist import FORMAT
from ragloom.segments.segment import BLOCK
from ragloom.segments.view import Part

VECTOR_ROWS = 16_384  # rows copied at a time
BLOCK_SLICE = 1 << 15  # postings blocks bounded at a time


class Cancelled(Exception):
    """A merge or graph build given up midway (the process is closing): its output file is
    incomplete and must be removed; nothing was committed."""


def _never() -> bool:
    return False


def _keeps(parts: Sequence[Part]) -> list[np.ndarray]:
    return [np.arange(p.segment.n) if p.dead is None else np.flatnonzero(~p.dead) for p in parts]


def _postings(
    parts: Sequence[Part], keeps: list[np.ndarray]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Merged CSR postings (terms, ptr, docs, tfs) of the live chunks."""
    terms = np.unique(np.concatenate([p.segment.terms for p in parts])).astype(np.uint32)
    plans = []
    counts_out = np.zeros(len(terms), np.int64)
    offset = 0
    for part, keep in zip(parts, keeps):
        seg = part.segment
        if part.dead is None:
            live = None
            counts = np.diff(seg.ptr)
        else:
            live = ~part.dead[seg.docs]
            running = np.concatenate(([0], np.cumsum(live, dtype=np.int64)))
            counts = running[seg.ptr[1:]] - running[seg.ptr[:-1]]
        index = terms.searchsorted(seg.terms)
        counts_out[index] += counts
        plans.append((index, counts, live, offset))
        offset += len(keep)
    ptr = np.concatenate(([0], np.cumsum(counts_out))).astype(np.int64)
    top_tf = max((int(p.segment.tfs.max()) if len(p.segment.tfs) else 0) for p in parts)
    docs = np.empty(int(ptr[-1]), np.uint32)
    tfs = np.empty(int(ptr[-1]), np.uint16 if top_tf < 2**16 else np.uint32)
    cursor = ptr[:-1].copy()
    for (part, keep), (index, counts, live, offset) in zip(zip(parts, keeps), plans):
        seg = part.segment
        if live is None:
            new_docs = seg.docs.astype(np.int64) + offset
            new_tfs = seg.tfs
        else:
            renumber = np.full(seg.n, -1, np.int64)
            renumber[keep] = np.arange(len(keep)) + offset
            chosen = np.flatnonzero(live)
            new_docs = renumber[seg.docs[chosen].astype(np.int64)]
            new_tfs = seg.tfs[chosen]
            del chosen
        some = counts > 0
        index, counts = index[some], counts[some]
        starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
        dest = np.repeat(cursor[index] - starts, counts) + np.arange(int(counts.sum()))
        docs[dest] = new_docs
        tfs[dest] = new_tfs
        cursor[index] += counts
        del dest, new_docs
    present = counts_out > 0
    if not present.all():
        terms = terms[present]
        ptr = np.concatenate(([0], np.cumsum(counts_out[present]))).astype(np.int64)
    return terms, ptr, docs, tfs


def _block_bounds(
    ptr: np.ndarray, docs: np.ndarray, tfs: np.ndarray, lengths: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-term block pointers and per-block (max tf, min length), a slice at a time."""
    counts = np.diff(ptr)
    per_term = (counts + BLOCK - 1) // BLOCK
    block_ptr = np.concatenate(([0], np.cumsum(per_term))).astype(np.int64)
    total = int(block_ptr[-1])
    max_tf = np.empty(total, tfs.dtype)
    min_len = np.empty(total, np.float64)
    for lo in range(0, total, BLOCK_SLICE):
        hi = min(total, lo + BLOCK_SLICE)
        term_of = np.searchsorted(block_ptr, np.arange(lo, hi), side="right") - 1
        starts = ptr[term_of] + BLOCK * (np.arange(lo, hi) - block_ptr[term_of])
        ends = np.minimum(starts + BLOCK, ptr[term_of + 1])
        first, last = int(starts[0]), int(ends[-1])
        local = starts - first
        max_tf[lo:hi] = np.maximum.reduceat(tfs[first:last], local)
        min_len[lo:hi] = np.minimum.reduceat(lengths[docs[first:last]], local)
    return block_ptr, max_tf, min_len


def _vector_blocks(
    parts: Sequence[Part],
    keeps: list[np.ndarray],
    epoch: int,
    dimension: int,
    stop: Callable[[], bool] = _never,
) -> Iterator[np.ndarray]:
    for part, keep in zip(parts, keeps):
        seg = part.segment
        usable = seg.vectors is not None and seg.vector_epoch == epoch
        late = dict(zip(part.late_docs.tolist(), range(len(part.late_docs))))
        for lo in range(0, len(keep), VECTOR_ROWS):
            if stop():
                raise Cancelled
            docs = keep[lo : lo + VECTOR_ROWS]
            if usable and seg.dimension == dimension:
                block = np.asarray(seg.vectors[docs], np.float32)  # type: ignore[index]
            else:
                block = np.zeros((len(docs), dimension), np.float32)
            for i, doc in enumerate(docs.tolist()):
                j = late.get(doc)
                if j is not None:
                    block[i] = part.late_vectors[j]  # type: ignore[index]
            yield block


def _has_vector(parts: Sequence[Part], keeps: list[np.ndarray], epoch: int) -> np.ndarray:
    return (
        np.concatenate([p.has_vector(epoch)[keep] for p, keep in zip(parts, keeps)])
        if parts
        else np.zeros(0, bool)
    )


def merge_to_file(
    parts: Sequence[Part],
    epoch: int,
    dimension: int | None,
    path: Path,
    stop: Callable[[], bool] = _never,
) -> tuple[int, int]:
    """Write the live chunks of `parts` (in row order) as one segment file.

    Returns (chunks written, file size in bytes). Raises `Cancelled` between steps once
    `stop()` is true (the caller removes the incomplete file)."""
    keeps = _keeps(parts)
    rows = np.concatenate([p.segment.rows[k] for p, k in zip(parts, keeps)])
    lengths = np.concatenate([p.segment.lengths[k] for p, k in zip(parts, keeps)])
    terms, ptr, docs, tfs = _postings(parts, keeps)
    if stop():
        raise Cancelled
    block_ptr, max_tf, min_len = _block_bounds(ptr, docs, tfs, lengths)
    columns = MetadataColumns.concat([(p.segment.columns, k) for p, k in zip(parts, keeps)])
    arrays: dict[str, np.ndarray | Blocks] = {
        "rows": rows.astype(np.int64),
        "terms": terms,
        "ptr": ptr,
        "docs": docs,
        "tfs": tfs,
        "block_ptr": block_ptr,
        "block_max_tf": max_tf,
        "lengths": lengths.astype(np.uint32),
        "block_min_len": min_len.astype(np.uint32),
    }
    meta_arrays, meta_info = columns.to_arrays()
    arrays.update(meta_arrays)
    if dimension is not None:
        arrays["vectors"] = Blocks(
            np.dtype(np.float32),
            (len(rows), dimension),
            _vector_blocks(parts, keeps, epoch, dimension, stop),
        )
        arrays["has_vector"] = _has_vector(parts, keeps, epoch)
    info = {"format": FORMAT, "vector_epoch": epoch, "metadata": meta_info}
    return len(rows), write_arrays(path, arrays, info)
