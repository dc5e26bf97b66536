"""One immutable segment: the postings, lengths, vectors and metadata of a run of chunks.

Chunks are numbered 0..n-1 inside a segment (`rows` maps them to chunk row ids, ascending).
Postings are grouped by term (CSR): the chunks containing `terms[i]` are
`docs[ptr[i]:ptr[i+1]]` (ascending) with frequencies `tfs[...]`. Each term's postings are cut
into blocks of `BLOCK`; a block keeps its largest frequency and its shortest chunk, which
bound the BM25 weight of any posting in it for any k1, b and collection statistics (the
weight grows with tf and shrinks with length), so top-k search can skip whole blocks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from ragloom.segments.columns import MetadataColumns
from ragloom.segments.postings import Postings

BLOCK = 128


@dataclass(frozen=True, eq=False)
class Segment:
    """Postings (CSR by term, with block bounds), lengths, vectors and metadata of n chunks."""

    rows: np.ndarray  # int64 chunk row ids, ascending
    lengths: np.ndarray  # float64 chunk lengths in terms
    terms: np.ndarray  # uint32 term ids, ascending
    ptr: np.ndarray  # int64, len(terms) + 1
    docs: np.ndarray  # uint32 chunk numbers, ascending within a term
    tfs: np.ndarray  # term frequencies (unsigned integers)
    block_ptr: np.ndarray  # int64, len(terms) + 1: a term's blocks
    block_max_tf: np.ndarray  # per block
    block_min_len: np.ndarray  # per block
    columns: MetadataColumns
    vectors: np.ndarray | None = None  # (n, dimension) float32; rows without a vector are 0
    has_vector: np.ndarray | None = None  # bool per chunk
    vector_epoch: int = 0  # which embedding (model) generation the vectors belong to
    name: str = ""  # a file segment's id in the manifest ("" in memory)
    ann: Any = field(default=None, compare=False)  # an approximate vector index, when built
    cache: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def n(self) -> int:
        return len(self.rows)

    @cached_property
    def total_length(self) -> float:
        """Sum of the chunks' lengths (deleted ones included)."""
        return float(self.lengths.sum())

    @property
    def first_row(self) -> int:
        return int(self.rows[0]) if len(self.rows) else 0

    @property
    def last_row(self) -> int:
        return int(self.rows[-1]) if len(self.rows) else 0

    @property
    def dimension(self) -> int | None:
        return None if self.vectors is None else int(self.vectors.shape[1])

    def term_index(self, term_id: int) -> int:
        """Position of `term_id` in `terms`, or -1."""
        if not 0 <= term_id < 2**32:
            return -1
        # The key in the array's own dtype: a mismatch makes numpy copy the whole array.
        i = int(self.terms.searchsorted(np.uint32(term_id)))
        return i if i < len(self.terms) and int(self.terms[i]) == term_id else -1

    def df(self, term_id: int) -> int:
        """Chunks of this segment containing the term (deleted ones included)."""
        i = self.term_index(term_id)
        return 0 if i < 0 else int(self.ptr[i + 1] - self.ptr[i])

    def postings(self, term_id: int) -> tuple[np.ndarray, np.ndarray]:
        """(chunk numbers, frequencies) of a term."""
        i = self.term_index(term_id)
        if i < 0:
            return _NO_DOCS, _NO_TFS
        lo, hi = int(self.ptr[i]), int(self.ptr[i + 1])
        return self.docs[lo:hi], self.tfs[lo:hi]

    def row_index(self, rows: np.ndarray) -> np.ndarray:
        """Chunk numbers of the given row ids (-1 where a row is not in this segment)."""
        rows = np.asarray(rows, np.int64)
        if not len(self.rows):
            return np.full(len(rows), -1, np.int64)
        pos = np.minimum(np.searchsorted(self.rows, rows), len(self.rows) - 1)
        return np.where(self.rows[pos] == rows, pos, -1).astype(np.int64)


_NO_DOCS = np.zeros(0, np.uint32)
_NO_TFS = np.zeros(0, np.uint32)


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


def _csr(
    term_of: np.ndarray, doc_of: np.ndarray, tf_of: np.ndarray, lengths: np.ndarray
) -> dict[str, np.ndarray]:
    """CSR arrays from postings already sorted by (term, doc)."""
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
    arrays = _csr(terms[order], docs[order], tfs[order], lengths)
    return Segment(
        rows=rows,
        lengths=lengths,
        columns=MetadataColumns.build(metadatas),
        vectors=vectors,
        has_vector=has_vector,
        vector_epoch=vector_epoch,
        **arrays,
    )


def merge_segments(
    parts: Sequence[tuple[Segment, np.ndarray | None]],
    vector_epoch: int,
    dimension: int | None,
    late: dict[int, np.ndarray] | None = None,
) -> Segment:
    """One segment holding the live chunks of several segments (given in row order).

    `parts` pairs each segment with its deletion mask (True: deleted) or None. Postings are
    moved, not re-sorted: every term's postings are laid out part after part, which keeps
    chunk numbers ascending. Vectors of another epoch are dropped; `late` supplies vectors
    (row -> vector) that arrived after a part was built.
    """
    keeps = []
    offsets = []
    total = 0
    for segment, dead in parts:
        keep = np.arange(segment.n) if dead is None else np.flatnonzero(~dead)
        keeps.append(keep)
        offsets.append(total)
        total += len(keep)
    rows = np.concatenate([s.rows[k] for (s, _), k in zip(parts, keeps)]) if parts else _ROWS0
    lengths = np.concatenate([s.lengths[k] for (s, _), k in zip(parts, keeps)]) if parts else _LEN0
    term_pieces, doc_pieces, tf_pieces = [], [], []
    for (segment, _), keep, offset in zip(parts, keeps, offsets):
        renumber = np.full(segment.n, -1, np.int64)
        renumber[keep] = np.arange(len(keep)) + offset
        term_of = np.repeat(segment.terms, np.diff(segment.ptr))
        new_doc = renumber[segment.docs.astype(np.int64)]
        alive = new_doc >= 0
        term_pieces.append(term_of[alive])
        doc_pieces.append(new_doc[alive])
        tf_pieces.append(segment.tfs[alive].astype(np.uint32))
    term_of = np.concatenate(term_pieces) if term_pieces else np.zeros(0, np.uint32)
    doc_of = np.concatenate(doc_pieces) if doc_pieces else np.zeros(0, np.int64)
    tf_of = np.concatenate(tf_pieces) if tf_pieces else np.zeros(0, np.uint32)
    # Stable by term: parts come in row order and each part's docs ascend within a term.
    order = np.argsort(term_of, kind="stable")
    arrays = _csr(term_of[order], doc_of[order], tf_of[order], lengths)
    columns = MetadataColumns.concat([(s.columns, k) for (s, _), k in zip(parts, keeps)])
    vectors, has_vector = _merged_vectors(parts, keeps, rows, vector_epoch, dimension, late)
    return Segment(
        rows=rows,
        lengths=lengths,
        columns=columns,
        vectors=vectors,
        has_vector=has_vector,
        vector_epoch=vector_epoch,
        **arrays,
    )


_ROWS0 = np.zeros(0, np.int64)
_LEN0 = np.zeros(0, np.float64)


def _merged_vectors(
    parts: Sequence[tuple[Segment, np.ndarray | None]],
    keeps: list[np.ndarray],
    rows: np.ndarray,
    epoch: int,
    dimension: int | None,
    late: dict[int, np.ndarray] | None,
) -> tuple[np.ndarray | None, np.ndarray | None]:
    if dimension is None:
        return None, None
    matrix = np.zeros((len(rows), dimension), np.float32)
    present = np.zeros(len(rows), bool)
    at = 0
    for (segment, _), keep in zip(parts, keeps):
        usable = (
            segment.vectors is not None
            and segment.vector_epoch == epoch
            and segment.dimension == dimension
        )
        if usable:
            matrix[at : at + len(keep)] = segment.vectors[keep]  # type: ignore[index]
            present[at : at + len(keep)] = segment.has_vector[keep]  # type: ignore[index]
        at += len(keep)
    if late:
        for i, row in enumerate(rows.tolist()):
            vector = late.get(row)
            if vector is not None:
                matrix[i] = vector
                present[i] = True
    return matrix, present
