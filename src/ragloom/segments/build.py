"""Building segments: from chunks' postings, metadata and vectors, given in row order.

Postings arrive per chunk (or flat, as ingest hands them over) and are laid out by term
(CSR) with the block bounds top-k search relies on (`ragloom.segments.segment`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ragloom.segments.columns import MetadataColumns
from ragloom.segments.segment import BLOCK, Segment


def _tf_dtype(top: int) -> np.dtype:
    return np.dtype(np.uint16) if top < 2**16 else np.dtype(np.uint32)


def _blocks(ptr: np.ndarray, tfs: np.ndarray, doc_lengths: np.ndarray) -> tuple[np.ndarray, ...]:
    """Block pointers and per-block (max tf, min length) for CSR postings."""
    counts = np.diff(ptr)
    per_term = (counts + BLOCK - 1) // BLOCK
    block_ptr = np.zeros(len(counts) + 1, np.int64)
    np.cumsum(per_term, out=block_ptr[1:])
    # Start offset of every block: term start + BLOCK * (block number within the term).
    term_of_block = np.repeat(np.arange(len(counts)), per_term)
    within = np.arange(int(block_ptr[-1]), dtype=np.int64) - block_ptr[term_of_block]
    starts = ptr[term_of_block] + BLOCK * within
    if len(starts) == 0:
        return block_ptr, np.zeros(0, tfs.dtype), np.zeros(0, np.float64)
    max_tf = np.maximum.reduceat(tfs, starts)
    min_len = np.minimum.reduceat(doc_lengths, starts)
    return block_ptr, max_tf, min_len


def csr(
    term_of: np.ndarray, doc_of: np.ndarray, tf_of: np.ndarray, lengths: np.ndarray
) -> dict[str, Any]:
    """CSR arrays from postings already sorted by (term, doc), by `Segment`'s field names."""
    terms, starts = np.unique(term_of, return_index=True)
    ptr = np.append(starts, len(term_of)).astype(np.int64)
    tfs = tf_of.astype(_tf_dtype(int(tf_of.max()) if len(tf_of) else 0))
    docs = doc_of.astype(np.uint32)
    block_ptr, max_tf, min_len = _blocks(ptr, tfs, lengths[docs] if len(docs) else lengths[:0])
    return {
        "terms": terms.astype(np.uint32),
        "ptr": ptr,
        "docs": docs,
        "tfs": tfs,
        "block_ptr": block_ptr,
        "block_max_tf": max_tf,
        "block_min_len": min_len,
    }


def build_segment_flat(
    rows: Sequence[int] | np.ndarray,
    terms: np.ndarray,
    tfs: np.ndarray,
    counts: np.ndarray,
    metadatas: Sequence[dict[str, Any]],
    vectors: np.ndarray | None = None,
    has_vector: np.ndarray | None = None,
    vector_epoch: int = 0,
) -> Segment:
    """A segment from flat postings: `counts[i]` (term id, frequency) pairs per chunk, in
    ascending row order."""
    rows = np.asarray(rows, np.int64)
    counts = np.asarray(counts, np.int64)
    docs = np.repeat(np.arange(len(counts), dtype=np.uint32), counts)
    lengths = np.bincount(docs, weights=tfs, minlength=len(counts)).astype(np.float64)
    order = np.argsort(terms, kind="stable")  # docs stay ascending within a term
    arrays = csr(terms[order], docs[order], tfs[order], lengths)
    columns = MetadataColumns.build(metadatas)
    return assembled(rows, lengths, columns, vectors, has_vector, vector_epoch, arrays)


def assembled(
    rows: np.ndarray,
    lengths: np.ndarray,
    columns: MetadataColumns,
    vectors: np.ndarray | None,
    has_vector: np.ndarray | None,
    vector_epoch: int,
    arrays: dict[str, Any],
) -> Segment:
    """A segment of its parts: rows, lengths, metadata columns, vectors (with which rows
    hold one, of which epoch) and the CSR postings (`csr`)."""
    return Segment(
        rows=rows,
        lengths=lengths,
        columns=columns,
        vectors=vectors,
        has_vector=has_vector,
        vector_epoch=vector_epoch,
        **arrays,
    )


def segment_from(
    rows: Sequence[int],
    postings: tuple[np.ndarray, np.ndarray, np.ndarray],
    metadatas: Sequence[dict[str, Any]],
    vectors: Sequence[np.ndarray | None],
    dimension: int | None,
    epoch: int,
) -> Segment:
    """An in-memory segment from flat postings; chunks whose vector is None are pending."""
    matrix = has = None
    if dimension is not None:
        matrix = np.zeros((len(rows), dimension), np.float32)
        has = np.fromiter((v is not None for v in vectors), bool, len(vectors))
        if has.any():
            matrix[has] = np.stack([v for v in vectors if v is not None])
    ids, tfs, counts = postings
    return build_segment_flat(rows, ids, tfs, counts, metadatas, matrix, has, epoch)
