"""Pipeline stages as plain functions: legs -> fuse -> threshold -> top-k (then hydration,
`ragloom.engine.hydrate`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

LEXICAL, DENSE = "lexical", "dense"


@dataclass(frozen=True)
class Candidate:
    """A chunk row on its way through the pipeline, carrying each stage's provenance."""

    row_id: int
    score: float
    match: str  # "lexical", "dense" or "both"
    lexical_rank: int | None = None
    lexical_score: float | None = None
    dense_rank: int | None = None
    dense_score: float | None = None
    fused_score: float | None = None
    fused_by: str | None = None  # "adaptive", "rrf" or "weighted" when legs were fused
    lexical_share: float | None = None  # adaptive fusion: BM25 over the query's ceiling
    dense_share: float | None = None  # adaptive fusion: the cosine counted (0 if negative)
    fusion_detail: Any = None  # adaptive fusion: the query's weights and why (QueryWeights)
    metadata_score: float | None = None  # share of `prefer` rules matched (weighted fusion)
    boosts: tuple[tuple[str, float], ...] = ()  # (label, factor) of each boost applied
    diversity: tuple[str, ...] = ()  # what diversity stages decided about this candidate
    variants: tuple[tuple[int, int], ...] = ()  # (query variant, rank in its ranking)
    hop: int | None = None  # the multi-hop round that first found this chunk
    rerank_score: float | None = None  # the reranker's relevance score
    reranked_by: str | None = None  # the reranker's name
    rank_before_rerank: int | None = None


def leg_candidates(
    leg: str, row_ids: np.ndarray, scores: np.ndarray, alone: bool = False
) -> list[Candidate]:
    """Wrap one leg's ranked output as candidates (ranks are 1-based).

    `alone` marks a single-leg search, where the leg's score is also the fused score.
    """
    out = []
    for rank, (row, score) in enumerate(zip(row_ids.tolist(), scores.tolist()), start=1):
        fused = score if alone else None
        if leg == LEXICAL:
            out.append(Candidate(row, score, LEXICAL, rank, score, fused_score=fused))
        else:
            out.append(
                Candidate(row, score, DENSE, dense_rank=rank, dense_score=score, fused_score=fused)
            )
    return out


def drop_weak_dense_only(candidates: Sequence[Candidate], min_similarity: float) -> list[Candidate]:
    """Drop hits found only by the dense leg whose cosine is below `min_similarity`."""
    return [
        c
        for c in candidates
        if c.match != DENSE or (c.dense_score is not None and c.dense_score >= min_similarity)
    ]


def apply_min_score(candidates: Sequence[Candidate], min_score: float | None) -> list[Candidate]:
    """Drop candidates whose final score is below `min_score`."""
    if min_score is None:
        return list(candidates)
    return [c for c in candidates if c.score >= min_score]


def top_k(candidates: Sequence[Candidate], k: int) -> list[Candidate]:
    """The best `k` by score (stable: earlier candidates win ties)."""
    ranked = sorted(candidates, key=lambda c: -c.score)
    return ranked[:k]
