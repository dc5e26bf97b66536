"""A hybrid search that nothing reorders after fusion builds only the fused candidates its
top k can hold (`fusion.fuse` with `keep`): the top k it returns, ties at the cut and their
stable keys included, and the count of weak dense-only hits dropped by the floor are
exactly what fusing every candidate (the reference, `tests.fusion_reference`), dropping the
weak ones and taking the top k give."""

from __future__ import annotations

import numpy as np
import pytest

from ragloom.retrieval.fusion import FUSIONS, fuse
from ragloom.retrieval.pipeline import head_positions
from tests.fusion_reference import reference_fuse, top_k


def _leg(rng: np.random.Generator, size: int, pool: int, dense: bool, ties: bool):
    rows = rng.choice(pool, size=size, replace=False).astype(np.int64)
    scores = rng.uniform(-0.3, 0.9, size).astype(np.float32) if dense else rng.gamma(2, 3, size)
    if ties:  # few distinct values: long runs of equal fused scores at every cut
        scores = np.round(scores, 1).astype(scores.dtype)
    return rows, np.sort(scores)[::-1]


def _cases():
    rng = np.random.default_rng(36)
    for case in range(80):
        pool = int(rng.integers(5, 150))
        ties = case % 3 == 0
        lex = _leg(rng, int(rng.integers(0, min(pool, 60) + 1)), pool, False, ties)
        den = _leg(rng, int(rng.integers(0, min(pool, 60) + 1)), pool, True, ties)
        yield case, lex, den


def _keys_of(rows):
    """A stable key per row that disagrees with row order (as document ids do)."""
    return {row: (f"doc-{(row * 7919) % 101:03d}", row % 3) for row in rows}


@pytest.mark.parametrize("method", FUSIONS)
def test_head_gives_the_top_k_of_every_candidate(method):
    compared = cut = 0
    for case, lex, den in _cases():
        ceiling = None if case % 4 == 0 else 25.0
        for floor in (None, 0.0, 0.35):
            kept, weak = reference_fuse(lex, den, method, ceiling=ceiling, floor=floor)
            for keep in (1, 2, 5, 10, 40):
                head, dropped = fuse(
                    lex, den, method=method, ceiling=ceiling, floor=floor, keep=keep
                )
                assert dropped == weak, (case, floor, keep)
                assert [vars(c) for c in head] == [vars(c) for c in kept[: len(head)]]
                want = top_k(kept, keep, _keys_of)
                assert [vars(c) for c in top_k(head, keep, _keys_of)] == [vars(c) for c in want]
                compared += len(want)
                cut += len(head) < len(kept)
    assert compared > 3000
    if method == "adaptive":
        assert cut > 500  # the adaptive path did build fewer candidates


def test_without_keep_every_candidate_is_built():
    for case, lex, den in _cases():
        full, _ = reference_fuse(lex, den, "adaptive", ceiling=20.0)
        head, dropped = fuse(lex, den, ceiling=20.0)
        assert dropped == 0
        assert [vars(c) for c in head] == [vars(c) for c in full], case


def test_metadata_preferences_cut_at_the_same_top_k():
    for case, lex, den in _cases():
        meta = {row: (row % 3) / 2 for row in [*lex[0].tolist(), *den[0].tolist()]}
        weights = {"metadata": 0.5}
        full, _ = reference_fuse(lex, den, weights=weights, ceiling=20.0, preferences=meta)
        for keep in (1, 3, 10):
            head, _ = fuse(
                lex, den, weights=weights, ceiling=20.0, preferences=meta, floor=None, keep=keep
            )
            assert [vars(c) for c in head] == [vars(c) for c in full[: len(head)]], case
            want = top_k(full, keep, _keys_of)
            assert [vars(c) for c in top_k(head, keep, _keys_of)] == [vars(c) for c in want]


def test_head_positions_keep_every_tie_at_the_cut():
    scores = [9.0, 8.0, 5.0, 5.0, 5.0000000001, 5.0, 4.0, 3.0]
    order = [0, 1, 4, 2, 3, 5, 6, 7]
    weak = [False] * 8
    assert head_positions(order, scores, weak, 3) == ([0, 1, 4, 2, 3, 5], 0)
    assert head_positions(order, scores, weak, 7) == ([0, 1, 4, 2, 3, 5, 6], 0)
    assert head_positions(order, scores, weak, 20) == (order, 0)


def test_head_positions_count_the_weak_and_cut_among_the_rest():
    scores = [9.0, 8.0, 7.0, 6.0, 5.0]
    weak = [False, True, False, True, False]
    assert head_positions([0, 1, 2, 3, 4], scores, weak, 2) == ([0, 2], 2)
    assert head_positions([0, 1, 2, 3, 4], scores, weak, None) == ([0, 2, 4], 2)


def test_head_positions_do_not_cut_scores_without_an_order():
    scores = [9.0, float("nan"), 7.0, 6.0]
    weak = [False] * 4
    assert head_positions([0, 1, 2, 3], scores, weak, 1) == ([0, 1, 2, 3], 0)
