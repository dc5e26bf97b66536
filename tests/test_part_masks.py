"""A part's remembered live mask belongs to its own deletes: copies that share the part's
cache (`dataclasses.replace`) but hold other deletes never get another copy's mask, even
when Python reuses a freed array's address for a new one."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ragloom.segments.postings import Postings
from ragloom.segments.view import Part
from tests.segment_data import build_segment


def _part(n: int = 64) -> Part:
    postings = [Postings(np.array([1], np.uint32), np.array([1], np.uint32)) for _ in range(n)]
    return Part(build_segment(np.arange(n), postings, [{}] * n)).deleting(np.array([0]))


def test_copies_with_other_deletes_get_their_own_live_mask() -> None:
    part = _part()
    assert part.alive() is part.alive()  # remembered
    rng = np.random.default_rng(3)
    for _ in range(200):  # freed masks' addresses come back: none may answer for another
        dead = np.zeros(part.segment.n, bool)
        dead[rng.integers(0, part.segment.n, 20)] = True
        copy = replace(part, dead=dead)
        assert np.array_equal(copy.alive(), ~dead)
        del copy, dead
    assert np.array_equal(part.alive(), ~part.dead)


def test_allowed_counts_the_very_mask_it_is_given() -> None:
    """`Part.allowed` is remembered beside the mask it counted: another mask (a copy's live
    mask, a filter's) is counted afresh."""
    part = _part()
    assert part.allowed(part.alive()) == part.segment.n - 1
    rng = np.random.default_rng(5)
    for _ in range(200):
        mask = rng.random(part.segment.n) < 0.3
        assert part.allowed(mask) == int(mask.sum())
        del mask
    dead = np.zeros(part.segment.n, bool)
    dead[:10] = True
    copy = replace(part, dead=dead)  # shares the cache
    assert copy.allowed(copy.alive()) == part.segment.n - 10
    assert part.allowed(part.alive()) == part.segment.n - 1
