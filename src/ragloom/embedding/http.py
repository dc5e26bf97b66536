"""Embedding services over HTTP: OpenAI-compatible `/v1/embeddings` and Ollama `/api/embed`.

Every call sends a whole batch; a failed call is retried once after `retry_delay` seconds,
then raises `EmbeddingOffline` (cannot connect) or `EmbedFailed` (bad status, bad body).
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any

import httpx
import numpy as np

from ragloom.embedding.base import Embedder
from ragloom.errors import EmbeddingError, EmbeddingOffline, EmbedFailed


class HttpEmbedder(Embedder):
    """Shared transport: batching, one retry, typed errors, dimension checks."""

    provider = "http"
    path = ""

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        batch_size: int = 64,
        timeout: float = 30.0,
        retry_delay: float = 1.0,
        dimension: int | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.name = model
        self.batch_size = batch_size
        self.retry_delay = retry_delay
        self._dimension = dimension
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(timeout=timeout, headers=headers)

    @property
    def dimension(self) -> int | None:  # type: ignore[override]
        """Known from the collection's config or the first answer; never probed."""
        return self._dimension

    def _url(self) -> str:
        return self.base_url + self.path

    def _payload(self, texts: Sequence[str]) -> dict[str, Any]:
        return {"model": self.model, "input": list(texts)}

    def _vectors(self, body: Any, count: int) -> list[list[float]]:
        raise NotImplementedError

    def _call(self, texts: Sequence[str]) -> np.ndarray:
        url = self._url()
        try:
            response = self._client.post(url, json=self._payload(texts))
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            raise EmbeddingOffline(
                f"cannot reach the embedding service at {url} ({exc})",
                "start the service or check its address; lexical search still works",
            ) from None
        except httpx.TimeoutException:
            raise EmbedFailed(f"the embedding service at {url} timed out") from None
        except httpx.HTTPError as exc:
            raise EmbedFailed(f"request to the embedding service at {url} failed: {exc}") from None
        if response.status_code != 200:
            raise EmbedFailed(
                f"the embedding service at {url} answered {response.status_code}: "
                f"{response.text[:200]}"
            )
        try:
            vectors = self._vectors(response.json(), len(texts))
            matrix = np.asarray(vectors, dtype=np.float32)
        except (ValueError, TypeError, KeyError) as exc:
            raise EmbedFailed(
                f"malformed response from the embedding service at {url}: {exc}"
            ) from None
        if matrix.ndim != 2 or matrix.shape[0] != len(texts) or not np.isfinite(matrix).all():
            raise EmbedFailed(f"malformed response from {url}: expected {len(texts)} vectors")
        if self._dimension is not None and matrix.shape[1] != self._dimension:
            raise EmbedFailed(
                f"{url} returned {matrix.shape[1]}-dimensional vectors, expected {self._dimension}"
            )
        self._dimension = int(matrix.shape[1])
        return matrix

    def _embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        try:
            return self._call(texts)
        except EmbeddingError:
            time.sleep(self.retry_delay)
            return self._call(texts)

    def config(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            "model": self.model,
            "base_url": self.base_url,
            "dimension": self.dimension,
        }

    def close(self) -> None:
        self._client.close()


class OpenAIEmbedder(HttpEmbedder):
    """OpenAI-compatible `POST {base}/v1/embeddings`; key from `api_key` or OPENAI_API_KEY."""

    provider = "openai"
    path = "/v1/embeddings"

    def __init__(self, base_url: str, model: str, api_key: str | None = None, **kw: Any) -> None:
        base = base_url.rstrip("/")
        base = base[: -len("/v1")] if base.endswith("/v1") else base
        key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        super().__init__(base, model, api_key=key, **kw)

    def _vectors(self, body: Any, count: int) -> list[list[float]]:
        data = body["data"]
        if not isinstance(data, list) or len(data) != count:
            raise ValueError(f"'data' must list {count} embeddings")
        ordered = sorted(data, key=lambda item: item.get("index", 0))
        return [item["embedding"] for item in ordered]


class OllamaEmbedder(HttpEmbedder):
    """Ollama `POST {base}/api/embed` (`{"model", "input": [...]}` -> `{"embeddings"}`)."""

    provider = "ollama"
    path = "/api/embed"

    def _vectors(self, body: Any, count: int) -> list[list[float]]:
        vectors = body["embeddings"]
        if not isinstance(vectors, list) or len(vectors) != count:
            raise ValueError(f"'embeddings' must list {count} vectors")
        return vectors
