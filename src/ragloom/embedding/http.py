"""Embedding services over HTTP: OpenAI-compatible `/v1/embeddings` and Ollama.

Calls go through `ragloom.remote.RemoteService`: a connect timeout, a read timeout for batch
calls (ingest) and a budget of `QUERY_BUDGET` s in all for `embed_query` (a search waits on
it), one retry (when the budget leaves room for it), then
`EmbeddingOffline` (cannot connect) or `EmbedFailed` (bad status, bad body, too slow), and a
cooldown during which calls fail at once. The dimension is never probed: it comes from the
collection's stored config or from the service's first answer (None until then).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from ragloom.embedding.base import Embedder
from ragloom.errors import EmbeddingError, EmbeddingOffline, EmbedFailed, InputError
from ragloom.observe import embedding_failed
from ragloom.remote import TIMEOUT_OPTIONS, RemoteService, Timeouts, bearer, without_v1

WHAT = "the embedding service"
# A search waits on its query's embedding: 1.5 s in all, retry included, so that a hung or
# dead service degrades a hybrid query to its lexical leg within 2 s (a chat widget's user
# waits about that long). Indexing keeps the longer read timeout. `?query_budget=` changes it.
QUERY_BUDGET = 1.5
DEFAULT_TIMEOUTS = Timeouts(query_budget=QUERY_BUDGET)


def _query_timeouts(base: Timeouts, options: dict[str, str]) -> Timeouts:
    """`base` with a spec's options; a `query_timeout` given without a `query_budget` lifts
    the default budget (the user chose the waits: each try that long, as before budgets)."""
    chosen = base.with_options(options)
    if "query_timeout" in options and "query_budget" not in options:
        return replace(chosen, query_budget=None)
    return chosen


def _matrix(vectors: Any, count: int) -> np.ndarray:
    """`count` finite vectors of one length as a float32 matrix (ValueError otherwise)."""
    if not isinstance(vectors, list) or len(vectors) != count:
        raise ValueError(f"expected {count} embeddings")
    matrix = np.asarray(vectors, dtype=np.float32)
    if matrix.ndim != 2 or matrix.shape[1] == 0 or not np.isfinite(matrix).all():
        raise ValueError(f"expected {count} vectors of finite numbers, all of one length")
    return matrix


class HttpEmbedder(Embedder):
    """Shared transport: batching, the remote-call rules, dimension checks."""

    provider = "http"
    path = ""
    remote = True

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        batch_size: int = 64,
        timeouts: Timeouts | None = None,
        dimension: int | None = None,
        options: dict[str, str] | None = None,
        **timeout_options: float,
    ) -> None:
        """`options`: a spec's `?name=value` options (timeouts); `timeout_options` the same as
        keywords (`timeout=2, query_timeout=3, retry_delay=0.5, ...`)."""
        options = {**(options or {}), **{k: str(v) for k, v in timeout_options.items()}}
        unknown = sorted(set(options) - set(TIMEOUT_OPTIONS))
        if unknown:
            raise InputError(
                f"unknown embedding service option {unknown[0]!r}",
                f"known options: {', '.join(TIMEOUT_OPTIONS)}",
            )
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.name = model
        self.batch_size = batch_size
        self.dimension = int(dimension) if dimension is not None else None
        self.options = options  # kept in the collection's config to rebuild the embedder
        self.service = RemoteService(
            self.base_url,
            EmbeddingOffline,
            EmbedFailed,
            WHAT,
            _query_timeouts(timeouts or DEFAULT_TIMEOUTS, self.options),
            bearer(api_key),
        )

    def _request(self, texts: Sequence[str], interactive: bool) -> np.ndarray:
        """One call for `texts` (the subclass's wire format)."""
        raise NotImplementedError

    def _checked(self, matrix: np.ndarray) -> np.ndarray:
        """Adopt the dimension of the first answer; refuse any other afterwards."""
        if self.dimension is None:
            self.dimension = int(matrix.shape[1])
        elif matrix.shape[1] != self.dimension:
            raise EmbedFailed(
                f"{WHAT} at {self.base_url} returned {matrix.shape[1]}-dimensional vectors "
                f"for {self.model!r}, expected {self.dimension}",
                "the collection was indexed with another model or service; "
                "use that one, or `ragloom reembed` with this one",
            )
        return matrix

    def _embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        return self._checked(self._request(texts, interactive=False))

    def embed_query(self, text: str) -> np.ndarray:
        try:
            matrix = self._checked(self._request([text], interactive=True))
        except EmbeddingError as exc:
            embedding_failed(exc)  # monitoring (ragloom.observe), as Embedder.embed does
            raise
        norm = float(np.linalg.norm(matrix[0]))
        return matrix[0] / norm if norm else matrix[0]

    def config(self) -> dict[str, Any]:
        """What a collection stores to rebuild this embedder; never calls the service."""
        config: dict[str, Any] = {
            "provider": self.provider,
            "model": self.model,
            "base_url": self.base_url,
            "dimension": self.dimension,
        }
        if self.options:
            config["options"] = self.options
        return config

    def close(self) -> None:
        self.service.close()


class OpenAIEmbedder(HttpEmbedder):
    """OpenAI-compatible `POST {base}/v1/embeddings`; key from `api_key` or OPENAI_API_KEY."""

    provider = "openai"
    path = "/v1/embeddings"

    def __init__(self, base_url: str, model: str, api_key: str | None = None, **kw: Any) -> None:
        key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        super().__init__(without_v1(base_url), model, api_key=key, **kw)

    def _request(self, texts: Sequence[str], interactive: bool) -> np.ndarray:
        def parse(body: Any) -> np.ndarray:
            data = body["data"]
            if not isinstance(data, list):
                raise ValueError("'data' must be a list")
            ordered = sorted(data, key=lambda item: item.get("index", 0))
            return _matrix([item["embedding"] for item in ordered], len(texts))

        payload = {"model": self.model, "input": list(texts)}
        return self.service.post_json(self.path, payload, parse, interactive)


class OllamaEmbedder(HttpEmbedder):
    """Ollama: `POST /api/embed` (`{"model", "input": [...]}` -> `{"embeddings"}`), and on a
    404 from it the pre-0.2 `POST /api/embeddings` (`{"model", "prompt"}` -> `{"embedding"}`,
    one text per request). Which one works is remembered."""

    provider = "ollama"
    path = "/api/embed"
    legacy_path = "/api/embeddings"

    def __init__(self, base_url: str, model: str, **kw: Any) -> None:
        super().__init__(base_url, model, **kw)
        self.legacy: bool | None = None  # None: not known yet

    def _request(self, texts: Sequence[str], interactive: bool) -> np.ndarray:
        if not self.legacy:
            try:
                matrix = self.service.post_json(
                    self.path,
                    {"model": self.model, "input": list(texts)},
                    lambda body: _matrix(body["embeddings"], len(texts)),
                    interactive,
                    final_statuses=(404,) if self.legacy is None else (),
                )
            except EmbedFailed as exc:
                if self.legacy is not None or getattr(exc, "status", None) != 404:
                    raise
                self.legacy = True
            else:
                self.legacy = False
                return matrix
        rows = [
            self.service.post_json(
                self.legacy_path,
                {"model": self.model, "prompt": text},
                lambda body: _matrix([body["embedding"]], 1)[0],
                interactive,
            )
            for text in texts
        ]
        return np.vstack(rows)
