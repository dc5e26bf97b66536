"""The rerank stage: a reranker re-scores the best fused candidates against the query.

Only the first `depth` candidates are scored (a cross-encoder costs milliseconds per pair);
they come back ordered by the reranker's score, which becomes their score, with the fused
rank kept for `explain`. When the reranker fails, the fused order stands and the failure is
reported (or raised when `strict`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from ragloom.errors import LLMError, RerankError, RerankFailed
from ragloom.rerank.base import Reranker
from ragloom.retrieval.pipeline import Candidate

TextsOf = Callable[[list[int]], list[str]]


def rerank_candidates(
    candidates: Sequence[Candidate],
    query: str,
    reranker: Reranker,
    texts_of: TextsOf,
    depth: int,
    strict: bool = False,
) -> tuple[list[Candidate], str | None]:
    """(the first `depth` candidates reranked, None) or (the fused head as it was, reason)."""
    head = list(candidates[:depth])
    if not head:
        return head, None
    try:
        scores = reranker.score(query, texts_of([c.row_id for c in head]))
        if len(scores) != len(head):
            raise RerankFailed(
                f"the reranker {reranker.name} returned {len(scores)} scores for {len(head)}"
            )
    except (RerankError, LLMError) as exc:
        if strict:
            raise
        return head, f"{exc.code}: {exc.message}"
    out = [
        replace(
            cand,
            score=float(score),
            rerank_score=float(score),
            reranked_by=reranker.name,
            rank_before_rerank=position,
        )
        for position, (cand, score) in enumerate(zip(head, scores), start=1)
    ]
    return sorted(out, key=lambda c: -c.score), None
