"""Pipeline stages as plain functions: legs -> fuse -> threshold -> top-k -> hydrate."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ragloom.models import Hit
from ragloom.store.records import StoredChunk
from ragloom.text import Tokenizer
from ragloom.text.highlight import match_spans, matched_terms

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
    fused_by: str | None = None  # "rrf" or "weighted" when legs were fused
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


def explanation(cand: Candidate, options: Any) -> dict[str, Any]:
    """Each stage's contribution to a hit's final score, for `explain`."""
    legs = {}
    if cand.lexical_rank is not None:
        legs["lexical"] = {"rank": cand.lexical_rank, "score": cand.lexical_score}
    if cand.dense_rank is not None:
        legs["dense"] = {"rank": cand.dense_rank, "cosine": cand.dense_score}
    fusion: dict[str, Any] = {"method": cand.fused_by or "none (one leg)"}
    if cand.fused_by == "rrf":
        fusion["k"] = options.rrf_k
    elif cand.fused_by == "weighted":
        fusion["normalization"] = options.normalization
    if cand.fused_by:
        from ragloom.retrieval.fusion import effective_weights  # (fusion imports this module)

        weights = effective_weights(cand.fused_by, options.weights)
        fusion["weights"] = {leg: w for leg, w in weights.items() if leg != "metadata" or w}
    if cand.metadata_score is not None:
        fusion["metadata_score"] = cand.metadata_score
    fusion["score"] = cand.fused_score
    boost = 1.0
    for _, factor in cand.boosts:
        boost *= factor
    steps: dict[str, Any] = {}
    if cand.variants:
        steps["variants"] = [{"variant": v, "rank": r} for v, r in cand.variants]
    if cand.hop is not None:
        steps["hop"] = cand.hop
    if cand.reranked_by is not None:
        steps["rerank"] = {
            "model": cand.reranked_by,
            "score": cand.rerank_score,
            "rank_before": cand.rank_before_rerank,
        }
    return {
        "match": cand.match,
        "legs": legs,
        "fusion": fusion,
        **steps,
        "boosts": [{"rule": label, "factor": factor} for label, factor in cand.boosts],
        "boost_factor": boost,
        "diversity": list(cand.diversity),
        "final_score": cand.score,
    }


def hydrate(
    candidates: Sequence[Candidate], chunks: Mapping[int, StoredChunk], explain: Any = None
) -> list[Hit]:
    """Attach stored chunk data; candidates whose chunk vanished meanwhile are dropped.

    `explain`, when given, is the search's options: each hit then carries its explanation.
    """
    hits: list[Hit] = []
    for cand in candidates:
        chunk = chunks.get(cand.row_id)
        if chunk is None:
            continue
        hits.append(
            Hit(
                rank=len(hits) + 1,
                score=cand.score,
                chunk_id=chunk.chunk_id,
                document_id=chunk.document_id,
                text=chunk.text,
                start=chunk.start,
                end=chunk.end,
                source=chunk.source,
                title=chunk.title,
                metadata=chunk.metadata,
                collection=chunk.collection,
                match=cand.match,
                lexical_rank=cand.lexical_rank,
                lexical_score=cand.lexical_score,
                dense_rank=cand.dense_rank,
                dense_score=cand.dense_score,
                fused_score=cand.fused_score,
                rerank_score=cand.rerank_score,
                hop=cand.hop,
                explain=explanation(cand, explain) if explain is not None else None,
            )
        )
    return hits


def explain_matches(hits: Sequence[Hit], tokenizer: Tokenizer, query: str) -> None:
    """Add to each explained hit the query terms its text holds and where (`highlights`:
    [start, end] offsets into the hit's text of the words that matched)."""
    for hit in hits:
        if hit.explain is not None:
            hit.explain["matched_terms"] = matched_terms(tokenizer, query, hit.text)
            hit.explain["highlights"] = [list(s) for s in match_spans(tokenizer, query, hit.text)]
