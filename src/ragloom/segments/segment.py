"""One immutable segment: the postings, lengths, vectors and metadata of a run of chunks.

Chunks are numbered 0..n-1 inside a segment (`rows` maps them to chunk row ids, ascending).
Postings are grouped by term (CSR): the chunks containing `terms[i]` are
`docs[ptr[i]:ptr[i+1]]` (ascending) with frequencies `tfs[...]`. Each term's postings are cut
into blocks of `BLOCK`; a block keeps its largest frequency and its shortest chunk, which
bound the BM25 weight of any posting in it for any k1, b and collection statistics (the
weight grows with tf and shrinks with length), so top-k search can skip whole blocks.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from ragloom.segments.columns import MetadataColumns

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
    # Terms' weights, least recently used first (`ragloom.lexical.term_weights`).
    cache: OrderedDict[Any, Any] = field(default_factory=OrderedDict, compare=False, repr=False)
    # Filters' chunk masks by filter key, apart from `cache`: bounding one must not empty the other.
    masks: dict[Any, np.ndarray] = field(default_factory=dict, compare=False, repr=False)

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
