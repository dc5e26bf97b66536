"""Rerank services over HTTP: the common `/v1/rerank` protocol and text-embeddings-inference.

`/v1/rerank` (`{model, query, documents, top_n}` -> `{results: [{index, relevance_score}]}`)
is served by Cohere, Jina, vLLM and Infinity; text-embeddings-inference answers
`POST /rerank` (`{query, texts}` -> `[{index, score}]`). Both go through
`ragloom.remote.RemoteService`: timeouts, one retry, `RerankOffline` / `RerankFailed`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ragloom.errors import RerankFailed, RerankOffline
from ragloom.remote import ServiceClient, Timeouts, without_v1

API_KEY_VAR = "RAGLOOM_RERANK_API_KEY"
DEFAULT_TIMEOUTS = Timeouts(connect=2.0, read=10.0)


def _scores(items: Any, count: int, score_key: str) -> list[float]:
    """`[{index, <score_key>}]` in any order -> one score per document, in order."""
    if not isinstance(items, list):
        raise ValueError("expected a list of results")
    scores: list[float | None] = [None] * count
    for item in items:
        index, score = item["index"], item[score_key]
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < count:
            raise ValueError(f"result index {index!r} is out of range")
        if (
            isinstance(score, bool)
            or not isinstance(score, (int, float))
            or not math.isfinite(score)
        ):
            raise ValueError(f"score {score!r} is not a finite number")
        if scores[index] is not None:
            raise ValueError(f"index {index} appears twice")
        scores[index] = float(score)
    missing = [i for i, s in enumerate(scores) if s is None]
    if missing:
        raise ValueError(f"no score for {len(missing)} of {count} documents")
    return [float(s) for s in scores]  # type: ignore[arg-type]


class HttpReranker(ServiceClient):
    """Shared transport of the rerank services."""

    offline, failed, what = RerankOffline, RerankFailed, "the rerank service"
    default_timeouts = DEFAULT_TIMEOUTS
    key_vars = (API_KEY_VAR,)

    def _payload(self, query: str, documents: Sequence[str]) -> dict[str, Any]:
        raise NotImplementedError

    def _parse(self, body: Any, count: int) -> list[float]:
        raise NotImplementedError

    def score(self, query: str, documents: Sequence[str]) -> list[float]:
        """One relevance score per document, in order (one request for all of them)."""
        if not documents:
            return []
        self.calls += 1
        count = len(documents)
        return self.service.post_json(
            self.path, self._payload(query, documents), lambda body: self._parse(body, count)
        )


class CohereReranker(HttpReranker):
    """`POST {base}/v1/rerank` as Cohere, Jina, vLLM and Infinity serve it."""

    path = "/v1/rerank"
    provider = "rerank"

    def __init__(self, base_url: str, model: str, **kw: Any) -> None:
        super().__init__(without_v1(base_url), model, **kw)

    def _payload(self, query: str, documents: Sequence[str]) -> dict[str, Any]:
        return {
            "model": self.model,
            "query": query,
            "documents": list(documents),
            "top_n": len(documents),
            "return_documents": False,
        }

    def _parse(self, body: Any, count: int) -> list[float]:
        return _scores(body["results"], count, "relevance_score")


class TEIReranker(HttpReranker):
    """text-embeddings-inference `POST {base}/rerank` (scores after its sigmoid)."""

    path = "/rerank"
    provider = "tei"

    def _payload(self, query: str, documents: Sequence[str]) -> dict[str, Any]:
        return {"query": query, "texts": list(documents), "truncate": True, "raw_scores": False}

    def _parse(self, body: Any, count: int) -> list[float]:
        return _scores(body, count, "score")
