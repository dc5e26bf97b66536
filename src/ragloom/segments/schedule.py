"""The lifecycle of a collection's segments: when new chunks are flushed to a segment file,
which segments merge next (`ragloom.segments.merge_policy`), folding in-memory segments together,
and the view that results once a flush or merge has committed.

Pure decisions over views: the store runs them (`ragloom.store.sqlite.maintenance` writes
the file, commits the manifest change and publishes the new view).
"""

from __future__ import annotations

import os
from dataclasses import replace

import numpy as np

from ragloom.segments.merge_memory import merge_parts
from ragloom.segments.merge_policy import plan_merge
from ragloom.segments.segment import Segment
from ragloom.segments.view import CollectionView, Part

FLUSH_ROWS = int(os.environ.get("RAGLOOM_FLUSH_ROWS", "20000"))
MERGE_FACTOR = int(os.environ.get("RAGLOOM_MERGE_FACTOR", "10"))
# Once writes pause, the newest segment files are merged into one while they hold no more
# than this many chunks together: every query then looks in fewer places (one segment and
# one graph up to this size) instead of one per flush. A pass rewrites at most this many
# chunks, and only after a flush, so a write still costs what it writes, times a bound.
CONSOLIDATE_ROWS = int(os.environ.get("RAGLOOM_CONSOLIDATE_ROWS", "500000"))


def flush_due(view: CollectionView, flush_rows: int) -> bool:
    """True when the in-memory segments hold enough chunks to be written as a file."""
    memory = view.parts[view.files :]
    return sum(p.segment.n for p in memory) >= flush_rows


def tail_due(view: CollectionView, flush_rows: int) -> bool:
    """True when the in-memory segments hold a tail worth writing once writes pause: a
    quarter of a flush or more. Left in memory, a bulk load's last chunks would be rebuilt
    from their rows by every opener and searched without a graph; a trickle of a few
    writes stays in memory (a file for each would cost a merge)."""
    memory = view.parts[view.files :]
    return sum(p.segment.n for p in memory) >= max(1, flush_rows // 4)


def merge_plan(view: CollectionView, factor: int, flush_rows: int) -> tuple[int, int] | None:
    """The range [i, j) of file segments to merge next, or None."""
    files = view.parts[: view.files]
    plan = plan_merge(
        [p.segment.n for p in files],
        [p.n_dead for p in files],
        factor,
        flush_rows,
    )
    if plan is None or plan[1] - plan[0] < 1:
        return None
    return plan


def consolidation_plan(view: CollectionView, cap: int) -> tuple[int, int] | None:
    """The newest run [i, j) of two or more adjacent segment files whose live chunks stay
    within `cap` together (merged into one once writes pause), or None."""
    files = view.parts[: view.files]
    end = start = len(files)
    total = 0
    while start > 0:
        part = files[start - 1]
        size = part.segment.n - part.n_dead
        if total + size > cap:
            break
        total += size
        start -= 1
    return (start, end) if end - start >= 2 else None


def settled(view: CollectionView) -> CollectionView | None:
    """The view with its in-memory segments folded into one: the same version, read faster
    (None when there is nothing to fold)."""
    memory = view.parts[view.files :]
    if len(memory) < 2:
        return None
    merged = merge_parts(memory, view.epoch, view.dimension)
    return replace(view, parts=view.parts[: view.files] + ((Part(merged),) if merged.n else ()))


def carry_over(segment: Segment, current: CollectionView) -> Part:
    """The new segment as a part of `current`: rows deleted and vectors filled since."""
    part = Part(segment)
    live = set(current.live_rows(segment.rows.tolist()))
    gone = [r for r in segment.rows.tolist() if r not in live]
    if gone:
        part = part.deleting(segment.row_index(np.array(gone, np.int64)))
    if segment.has_vector is not None:
        missing = segment.rows[~segment.has_vector].tolist()
        if missing:
            vectors = current.vectors_of(missing)
            found = [(r, v) for r, v in zip(missing, vectors) if v.any()]
            if found:
                docs = segment.row_index(np.array([r for r, _ in found], np.int64))
                part = part.with_late(docs, np.stack([v for _, v in found]))
    return part


def replaced(
    current: CollectionView,
    view: CollectionView,
    i: int,
    j: int,
    new_part: Part | None,
    upto: int,
    generation: int,
    flush: bool,
) -> CollectionView:
    """`current` with the new segment in place of what it replaces."""
    files = list(current.parts[: current.files])
    memory = list(current.parts[current.files :])
    added = [new_part] if new_part is not None else []
    if flush:
        files += added
        kept = []
        for part in memory:  # in-memory segments may have been merged across `upto`
            if part.segment.last_row <= upto:
                continue
            if part.segment.first_row > upto:
                kept.append(part)
                continue
            hide = part.segment.rows <= upto
            dead = hide if part.dead is None else (part.dead | hide)
            rebuilt = merge_parts([replace(part, dead=dead)], current.epoch, current.dimension)
            if rebuilt.n:
                kept.append(Part(rebuilt))
        memory = kept
    else:
        names = {p.segment.name for p in view.parts[i:j]}
        at = next(k for k, p in enumerate(files) if p.segment.name in names)
        files = [p for p in files if p.segment.name not in names]
        files[at:at] = added
    return replace(
        current,
        generation=generation,
        parts=tuple(files + memory),
        files=len(files),
        flushed_upto=upto,
        max_row=max(current.max_row, upto),
    )
