"""Merging the rankings of several query variants into one, by chunk.

`rrf`: a chunk scores sum over variants of 1 / (k + its rank there), so chunks that many
variants find rise. `best`: a chunk keeps its best fused score over the variants. Either
way a chunk keeps the legs' provenance of the variant where it ranked best, and records its
rank in every variant that found it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ragloom.errors import InputError
from ragloom.retrieval.pipeline import Candidate

MERGES = ("rrf", "best")


def merge_variants(
    rankings: Sequence[Sequence[Candidate]], method: str = "rrf", k: float = 60.0
) -> list[Candidate]:
    """One candidate per chunk over the variants' rankings (best first, stable on ties)."""
    if method not in MERGES:
        raise InputError(f"unknown variant merge {method!r}", f"use one of {', '.join(MERGES)}")
    best: dict[int, tuple[int, Candidate]] = {}  # row -> (best rank, its candidate)
    found: dict[int, list[tuple[int, int]]] = {}
    totals: dict[int, float] = {}
    for variant, ranking in enumerate(rankings):
        for rank, cand in enumerate(ranking, start=1):
            found.setdefault(cand.row_id, []).append((variant, rank))
            seen = best.get(cand.row_id)
            if method == "rrf":
                totals[cand.row_id] = totals.get(cand.row_id, 0.0) + 1.0 / (k + rank)
            else:
                totals[cand.row_id] = max(totals.get(cand.row_id, cand.score), cand.score)
            if seen is None or rank < seen[0]:
                best[cand.row_id] = (rank, cand)
    merged = [
        replace(cand, score=totals[row], variants=tuple(found[row]))
        for row, (_, cand) in best.items()
    ]
    return sorted(merged, key=lambda c: -c.score)
