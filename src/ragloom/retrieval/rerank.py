"""The rerank stage: a reranker re-scores the best fused candidates against the query.

Only the first `depth` candidates are scored (a cross-encoder costs milliseconds per pair);
they come back ordered by the reranker's score, which becomes their score, with the fused
rank kept for `explain`. When the reranker fails, the fused order stands and the failure is
reported (or raised when `strict`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ragloom.errors import LLMError, RerankError, RerankFailed
from ragloom.rerank.base import Reranker
from ragloom.retrieval.pipeline import Candidate


def rerank_candidates(
    head: Sequence[Candidate],
    query: str,
    reranker: Reranker,
    texts: Sequence[str],
    strict: bool = False,
) -> tuple[list[Candidate], str | None]:
    """(the fused `head` reranked against the query by its passages' `texts`, None) or (the
    head as it was, why the reranker failed; raised instead when `strict`)."""
    head = list(head)
    if not head:
        return head, None
    try:
        scores = reranker.score(query, list(texts))
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


def passage_text(chunk: Any) -> str:
    """What a reranker reads: the document's title, then the chunk's text."""
    title = getattr(chunk, "title", None)
    return f"{title}\n{chunk.text}" if title else chunk.text
