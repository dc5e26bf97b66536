"""Pipeline stages as plain functions: leg -> fuse -> threshold -> top-k -> hydrate."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ragloom.models import Hit
from ragloom.store.sqlite import StoredChunk


@dataclass(frozen=True)
class Candidate:
    """A chunk row on its way through the pipeline, carrying each stage's provenance."""

    row_id: int
    score: float
    match: str
    lexical_rank: int | None = None
    lexical_score: float | None = None


def lexical_candidates(row_ids: np.ndarray, scores: np.ndarray) -> list[Candidate]:
    """Wrap the BM25 leg's ranked output as candidates (rank is 1-based)."""
    return [
        Candidate(int(r), float(s), "lexical", rank, float(s))
        for rank, (r, s) in enumerate(zip(row_ids.tolist(), scores.tolist()), start=1)
    ]


def fuse(legs: Sequence[Sequence[Candidate]]) -> list[Candidate]:
    """Combine legs into one ranked list. With a single leg its order and scores stand."""
    if len(legs) == 1:
        return list(legs[0])
    raise NotImplementedError("fusion of several legs arrives with dense retrieval")


def apply_min_score(candidates: Sequence[Candidate], min_score: float | None) -> list[Candidate]:
    """Drop candidates whose final score is below `min_score`."""
    if min_score is None:
        return list(candidates)
    return [c for c in candidates if c.score >= min_score]


def top_k(candidates: Sequence[Candidate], k: int) -> list[Candidate]:
    """The best `k` by score (stable: earlier candidates win ties)."""
    ranked = sorted(candidates, key=lambda c: -c.score)
    return ranked[:k]


def hydrate(candidates: Sequence[Candidate], chunks: Mapping[int, StoredChunk]) -> list[Hit]:
    """Attach stored chunk data; candidates whose chunk vanished meanwhile are dropped."""
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
            )
        )
    return hits
