"""Fusion of the lexical and dense legs: adaptive fusion (the default,
`ragloom.retrieval.adaptive`), reciprocal rank fusion and weighted score fusion.

All are pure functions over candidate lists and honour per-leg weights. The result is
sorted best first; ties keep the order in which candidates were first seen (lexical first).
No fused score is negative: weighted z-score fusion reports the standard normal CDF of the
weighted sum of z-scores (0.5 for a candidate at the search's average, and for a lone hit).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from ragloom.errors import InputError, InvalidRequest
from ragloom.retrieval.adaptive import ADAPTIVE, Ranked, adaptive_fusion, query_weights
from ragloom.retrieval.adaptive_ranked import fuse_distinct, fuse_ranked
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


def _merge(legs: Mapping[str, Sequence[Candidate]]) -> dict[int, Candidate]:
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


def _check_weights(weights: Mapping[str, float]) -> None:
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
    _check_weights(weights)
    if k < 0:
        raise InputError(f"rrf k must be >= 0, got {k}")
    merged = _merge(legs)
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
    metadata_scores: Callable[[int], float] | None = None,
) -> list[Candidate]:
    """score = sum over legs of weight * normalised leg score (+ weight * metadata score),
    passed through the normal CDF for z-scores (so that no score is negative).

    A row missing from a leg gets that leg's lowest normalised score (0 for min-max).
    `metadata_scores(row)` in [0, 1] (how well a chunk's metadata fits the caller's
    preferences) is a third signal with weight `weights["metadata"]`.
    """
    weights = effective_weights("weighted", weights)
    _check_weights(weights)
    merged = _merge(legs)
    totals = dict.fromkeys(merged, 0.0)
    if metadata_scores is not None:
        for row in merged:
            score = metadata_scores(row)
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
    legs: Mapping[str, Sequence[Candidate]],
    method: str = DEFAULT_FUSION,
    rrf_k: float = 60.0,
    weights: Mapping[str, float] | None = None,
    normalization: str = DEFAULT_NORMALIZATION,
    metadata_scores: Callable[[int], float] | None = None,
    ceiling: float | None = None,
    profile: Mapping[str, Any] | None = None,
) -> list[Candidate]:
    """Dispatch to a fusion method by name. `ceiling` (the most BM25 the query could give)
    and `profile` (the collection's probe profile) serve adaptive fusion."""
    if method == ADAPTIVE:
        weights = weights or {}
        _check_weights(weights)
        return adaptive_fusion(legs, _merge(legs), ceiling, profile, weights, metadata_scores)
    if method == "rrf":  # ranks only: a metadata weight applies to weighted fusion
        return reciprocal_rank_fusion(legs, rrf_k, weights)
    if method == "weighted":
        return weighted_fusion(legs, weights, normalization, metadata_scores)
    raise InputError(f"unknown fusion {method!r}", f"use one of {', '.join(FUSIONS)}")


def fuse_legs_ranked(
    lexical: Ranked,
    dense: Ranked,
    method: str = DEFAULT_FUSION,
    rrf_k: float = 60.0,
    weights: Mapping[str, float] | None = None,
    normalization: str = DEFAULT_NORMALIZATION,
    metadata_scores: Callable[[int], float] | None = None,
    ceiling: float | None = None,
    profile: Mapping[str, Any] | None = None,
) -> list[Candidate]:
    """`fuse` of the two legs' answers (row ids and scores, best first): adaptive fusion
    builds each fused candidate once (`adaptive_ranked.fuse_ranked`), the others fuse the legs'
    candidates (`pipeline.leg_candidates`)."""
    if method == ADAPTIVE:
        weights = weights or {}
        _check_weights(weights)
        return fuse_ranked(lexical, dense, ceiling, profile, weights, metadata_scores)
    legs = {LEXICAL: leg_candidates(LEXICAL, *lexical), DENSE: leg_candidates(DENSE, *dense)}
    return fuse(legs, method, rrf_k, weights, normalization, metadata_scores, ceiling, profile)


def fuse_legs_head(
    lexical: Ranked,
    dense: Ranked,
    method: str,
    rrf_k: float,
    weights: Mapping[str, float] | None,
    normalization: str,
    metadata_scores: Callable[[int], float] | None,
    ceiling: float | None,
    profile: Mapping[str, Any] | None,
    floor: float | None,
    keep: int | None,
) -> tuple[list[Candidate], int]:
    """`fuse_legs_ranked` with the dense-only hits below `floor` dropped, and how many were.
    With `keep` (nothing after fusion reorders), adaptive fusion of distinct rows builds
    only the candidates a top `keep` can hold, ties at the cut included: a hybrid query
    fuses about 80 candidates for a top 10, and building them was most of fusion's time."""
    if method == ADAPTIVE and metadata_scores is None:
        weights = weights or {}
        _check_weights(weights)
        lex_rows, den_rows = lexical[0].tolist(), dense[0].tolist()
        chosen = query_weights(lex_rows, den_rows, profile, weights, ceiling)
        found = fuse_distinct(lexical, dense, lex_rows, den_rows, chosen, floor, keep)
        if found is not None:
            return found
    fused = fuse_legs_ranked(
        lexical, dense, method, rrf_k, weights, normalization, metadata_scores, ceiling, profile
    )
    if floor is None:
        return fused, 0
    kept = drop_weak_dense_only(fused, floor)
    return kept, len(fused) - len(kept)
