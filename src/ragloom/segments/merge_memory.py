"""Merging segments in memory: into one segment of their live chunks, and the tiers that
keep a run of small writes from leaving many small in-memory segments behind.

(Merging straight into a segment file, in bounded memory, is `ragloom.segments.merge_file`.)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from ragloom.segments.build import assembled, csr
from ragloom.segments.columns import MetadataColumns
from ragloom.segments.merge_policy import plan_merge
from ragloom.segments.segment import Segment
from ragloom.segments.view import CollectionView, Part

MEMORY_FACTOR = 8  # in-memory segments merge in tiers of this many
MEMORY_FLOOR = 64


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
    arrays = csr(term_of[order], doc_of[order], tf_of[order], lengths)
    columns = MetadataColumns.concat([(s.columns, k) for (s, _), k in zip(parts, keeps)])
    vectors, has_vector = _merged_vectors(parts, keeps, rows, vector_epoch, dimension, late)
    return assembled(rows, lengths, columns, vectors, has_vector, vector_epoch, arrays)


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


def merge_parts(parts: Sequence[Part], epoch: int, dimension: int | None) -> Segment:
    """One segment of the live chunks of `parts` (their late vectors folded in)."""
    late: dict[int, np.ndarray] = {}
    for part in parts:
        if part.late_vectors is not None:
            rows = part.segment.rows[part.late_docs]
            late.update(zip(rows.tolist(), part.late_vectors))
    return merge_segments(
        [(p.segment, p.dead) for p in parts], epoch, dimension, late if late else None
    )


def compact_memory(view: CollectionView) -> CollectionView:
    """Merge in-memory segments in tiers so a run of small writes never leaves many of them."""
    memory = list(view.parts[view.files :])
    while True:
        plan = plan_merge(
            [p.segment.n for p in memory],
            [p.n_dead for p in memory],
            MEMORY_FACTOR,
            MEMORY_FLOOR,
            max_dead=0.5,
        )
        if plan is None:
            break
        i, j = plan
        merged = merge_parts(memory[i:j], view.epoch, view.dimension)
        memory[i:j] = [Part(merged)] if merged.n else []
    if len(memory) == len(view.parts) - view.files and all(
        a is b for a, b in zip(memory, view.parts[view.files :])
    ):
        return view
    return replace(view, parts=view.parts[: view.files] + tuple(memory))
