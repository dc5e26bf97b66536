"""The reranker contract: relevance scores for (query, passage) pairs, higher is better."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable


@runtime_checkable
class Reranker(Protocol):
    """Scores passages against a query. `name` says which model scored (for `explain`).

    `score` returns one float per document, in the documents' order, or raises a
    `RerankError` / `LLMError`; the rerank stage then keeps the fused order (degraded).
    """

    name: str

    def score(self, query: str, documents: Sequence[str]) -> list[float]:
        """One relevance score per document (comparable within this call)."""
        ...
