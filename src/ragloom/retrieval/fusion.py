"""Fusion of the lexical and dense legs, one entry point (`fuse`) for every search: adaptive
fusion (the default, `ragloom.retrieval.adaptive`), reciprocal rank fusion and weighted
score fusion, or one leg's answer alone.

All are pure functions of the legs' answers (row ids and scores, best first) and honour
per-leg weights. The result is sorted best first; ties keep the order in which candidates
were first seen (lexical first). No fused score is negative: weighted z-score fusion reports
the standard normal CDF of the weighted sum of z-scores (0.5 for a candidate at the search's
average, and for a lone hit).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from ragloom.errors import InputError, InvalidRequest
from ragloom.retrieval.adaptive import ADAPTIVE, Ranked, fuse_adaptive, one_leg, query_weights
from ragloom.retrieval.pipeline import (
    DENSE,
    LEXICAL,
    Candidate,
    drop_weak_dense_only,
    evolve,
    leg_candidates,
)

FUSIONS = (ADAPTIVE, "rrf", "weighted")
NORMALIZATIONS = ("minmax", "zscore")

# The default hybrid fusion: adaptive, chosen on SciFact (train), CoSQA (dev), Cranfield and
# CISI and reported on those and on held-out collections (docs/hybrid.md, "How the default
# was chosen"; bench/fusion_defaults.py). It weighs the legs per collection and per query,
# where the previous default (weighted z-score, dense 0.7) used one weight everywhere and
# fell to within 0.01 of its better leg on several collections. RRF and weighted fusion stay
# one option away: fusion="rrf" or fusion="weighted" (with their own default weights).
DEFAULT_FUSION = ADAPTIVE
DEFAULT_NORMALIZATION = "zscore"
# Per-leg weights a method uses when the caller gives none (adaptive computes its own).
DEFAULT_WEIGHTS: dict[str, dict[str, float]] = {
    ADAPTIVE: {"metadata": 0.0},
    "rrf": {"lexical": 1.0, "dense": 1.0, "metadata": 0.0},
    "weighted": {"lexical": 0.3, "dense": 0.7, "metadata": 0.0},
}


def effective_weights(method: str, weights: Mapping[str, float] | None) -> dict[str, float]:
    """The weights a fusion method applies: its defaults overridden by the caller's."""
    return {**DEFAULT_WEIGHTS.get(method, {}), **(weights or {})}


def merge_legs(legs: Mapping[str, Sequence[Candidate]]) -> dict[int, Candidate]:
    """One candidate per row carrying every leg's rank and score."""
    merged: dict[int, Candidate] = {}
    for leg in (LEXICAL, DENSE):
        for cand in legs.get(leg, ()):
            seen = merged.get(cand.row_id)
            if seen is None:
                merged[cand.row_id] = cand
            elif leg == DENSE:
                merged[cand.row_id] = evolve(
                    seen, match="both", dense_rank=cand.dense_rank, dense_score=cand.dense_score
                )
    return merged


METADATA = "metadata"


def check_weights(weights: Mapping[str, float]) -> None:
    for leg, weight in weights.items():
        if leg not in (LEXICAL, DENSE, METADATA):
            raise InvalidRequest(
                f"unknown leg {leg!r} in weights", "use 'lexical', 'dense' and 'metadata'"
            )
        if not isinstance(weight, (int, float)) or isinstance(weight, bool) or weight < 0:
            raise InvalidRequest(f"weight of {leg!r} must be a non-negative number, got {weight!r}")


def normal_cdf(value: float) -> float:
    """The standard normal distribution's CDF: z-scores onto (0, 1), order kept."""
    return 0.5 * (1.0 + math.erf(value / math.sqrt(2.0)))


def _ranked(merged: dict[int, Candidate], scores: dict[int, float], method: str) -> list[Candidate]:
    out = [
        evolve(c, score=scores[row], fused_score=scores[row], fused_by=method)
        for row, c in merged.items()
    ]
    return sorted(out, key=lambda c: -c.score)


def reciprocal_rank_fusion(
    legs: Mapping[str, Sequence[Candidate]],
    k: float = 60.0,
    weights: Mapping[str, float] | None = None,
) -> list[Candidate]:
    """score = sum over legs of weight / (k + rank)."""
    weights = effective_weights("rrf", weights)
    check_weights(weights)
    if k < 0:
        raise InputError(f"rrf k must be >= 0, got {k}")
    merged = merge_legs(legs)
    scores = {}
    for row, c in merged.items():
        total = 0.0
        if c.lexical_rank is not None:
            total += weights[LEXICAL] / (k + c.lexical_rank)
        if c.dense_rank is not None:
            total += weights[DENSE] / (k + c.dense_rank)
        scores[row] = total
    return _ranked(merged, scores, "rrf")


def normalize(scores: np.ndarray, method: str = "minmax") -> np.ndarray:
    """Min-max to [0, 1] (all-equal scores map to 1) or z-score (all-equal map to 0)."""
    if method not in NORMALIZATIONS:
        raise InputError(f"unknown normalization {method!r}", f"use one of {NORMALIZATIONS}")
    if len(scores) == 0:
        return scores.astype(np.float64)
    scores = scores.astype(np.float64)
    if method == "minmax":
        low, high = scores.min(), scores.max()
        return np.ones_like(scores) if high == low else (scores - low) / (high - low)
    std = scores.std()
    return np.zeros_like(scores) if std == 0 else (scores - scores.mean()) / std


def weighted_fusion(
    legs: Mapping[str, Sequence[Candidate]],
    weights: Mapping[str, float] | None = None,
    normalization: str = DEFAULT_NORMALIZATION,
    preferences: Mapping[int, float] | None = None,
) -> list[Candidate]:
    """score = sum over legs of weight * normalised leg score (+ weight * metadata score),
    passed through the normal CDF for z-scores (so that no score is negative).

    A row missing from a leg gets that leg's lowest normalised score (0 for min-max).
    `preferences[row]` in [0, 1] (how well a chunk's metadata fits the caller's `prefer`
    rules) is a third signal with weight `weights["metadata"]`.
    """
    weights = effective_weights("weighted", weights)
    check_weights(weights)
    merged = merge_legs(legs)
    totals = dict.fromkeys(merged, 0.0)
    if preferences is not None:
        for row in merged:
            score = preferences[row]
            merged[row] = replace(merged[row], metadata_score=score)
            totals[row] += weights[METADATA] * score
    for leg in (LEXICAL, DENSE):
        cands = legs.get(leg, ())
        if not cands:
            continue
        raw = np.array([c.score for c in cands], np.float64)
        norm = normalize(raw, normalization)
        floor = float(norm.min())
        by_row = dict(zip((c.row_id for c in cands), norm.tolist()))
        for row in merged:
            totals[row] += weights[leg] * by_row.get(row, floor)
    if normalization == "zscore":
        totals = {row: normal_cdf(total) for row, total in totals.items()}
    return _ranked(merged, totals, "weighted")


def fuse(
    lexical: Ranked | None,
    dense: Ranked | None,
    *,
    method: str = DEFAULT_FUSION,
    rrf_k: float = 60.0,
    weights: Mapping[str, float] | None = None,
    normalization: str = DEFAULT_NORMALIZATION,
    ceiling: float | None = None,
    profile: Mapping[str, Any] | None = None,
    preferences: Mapping[int, float] | None = None,
    floor: float | None = None,
    keep: int | None = None,
) -> tuple[list[Candidate], int]:
    """A search's legs fused by `method`, best first, with the dense-only hits whose cosine
    is below `floor` dropped, and how many were.

    With one leg's answer (the other None) that answer alone, each hit scored by its share
    (`adaptive.one_leg`). `ceiling` (the most BM25 the query could give) and `profile` (the
    collection's probe profile) serve adaptive fusion; `preferences` (row -> share of the
    `prefer` rules its metadata matches, for every row of both legs) the metadata weight.
    With `keep` (nothing after fusion reorders), adaptive fusion builds only the candidates
    a top `keep` can hold, ties at the cut included. A row a leg holds twice counts once,
    at its first (best) entry."""
    if dense is None:
        return one_leg(LEXICAL, lexical, ceiling), 0  # type: ignore[arg-type]
    if lexical is None:
        return one_leg(DENSE, dense, None), 0
    lexical, dense = _distinct(lexical), _distinct(dense)
    if method == ADAPTIVE:
        weights = weights or {}
        check_weights(weights)
        chosen = query_weights(lexical[0].tolist(), dense[0].tolist(), profile, weights, ceiling)
        meta_weight = float(weights.get(METADATA, 0.0) or 0.0)
        return fuse_adaptive(lexical, dense, chosen, preferences, meta_weight, floor, keep)
    legs = {LEXICAL: leg_candidates(LEXICAL, *lexical), DENSE: leg_candidates(DENSE, *dense)}
    if method == "rrf":  # ranks only: a metadata weight applies to weighted fusion
        fused = reciprocal_rank_fusion(legs, rrf_k, weights)
    elif method == "weighted":
        fused = weighted_fusion(legs, weights, normalization, preferences)
    else:
        raise InputError(f"unknown fusion {method!r}", f"use one of {', '.join(FUSIONS)}")
    if floor is None:
        return fused, 0
    kept = drop_weak_dense_only(fused, floor)
    return kept, len(fused) - len(kept)


def _distinct(ranked: Ranked) -> Ranked:
    """A leg's answer with each row once, at its first entry (legs hold distinct rows; a
    repeat is dropped rather than fused twice)."""
    rows = ranked[0].tolist()
    if len(set(rows)) == len(rows):
        return ranked
    first: dict[int, int] = {}
    for i, row in enumerate(rows):
        first.setdefault(row, i)
    keep = list(first.values())
    return ranked[0][keep], ranked[1][keep]
