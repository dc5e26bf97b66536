"""Which embedding model serves which collection, decided without calling any service.

A collection stores its model (provider, name, dimension, address) in its config. Opening,
searching lexically, stats and deletes never contact the model: an HTTP embedder is only
called to embed. The local model is loaded on first use.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from ragloom.embedding import Embedder, embedder_from_config, resolve_embedder
from ragloom.embedding.floors import model_floor
from ragloom.errors import EmbeddingError, EmbeddingMismatch, InputError
from ragloom.timing import timed

REEMBED_HINT = "run `ragloom reembed --collection {name} --embedder SPEC` to replace its vectors"
QUERY_CACHE = 1024


def embedding_config(embedder: Embedder) -> dict[str, Any]:
    """What a collection stores about its model (never a secret, never a service call),
    with the model's dense-only floor when it is known (see `ragloom.embedding.floors`)."""
    config = dict(embedder.config())
    config["dimension"] = getattr(embedder, "dimension", None)
    floor = model_floor(embedder)
    if floor is not None:
        config["dense_floor"] = floor
    return config


class Embedders:
    """Embedders by collection config, and remembered query vectors."""

    def __init__(self, spec: str | Embedder | None) -> None:
        if not (spec is None or isinstance(spec, (str, Embedder))):
            raise InputError(f"embedder must be a spec string or an Embedder, got {spec!r}")
        self.spec = spec
        self.explicit: Embedder | None = (
            None if spec in (None, "none", "auto") else resolve_embedder(spec)
        )
        self._by_config: dict[str, Embedder] = {}
        self._queries: dict[tuple[str, str], np.ndarray] = {}
        self._lock = threading.Lock()

    @property
    def lexical_only(self) -> bool:
        return self.spec in (None, "none")

    def for_new_collection(self) -> Embedder | None:
        """The model a new collection gets: the explicit one, or with "auto" the local model
        when installed (or $RAGLOOM_EMBEDDER)."""
        if self.explicit is not None:
            return self.explicit
        if self.spec != "auto":
            return None
        embedder = resolve_embedder("auto")
        if embedder is not None:
            self._by_config[self._key(embedding_config(embedder))] = embedder
        return embedder

    @staticmethod
    def _key(config: dict[str, Any]) -> str:
        stable = {k: v for k, v in config.items() if k not in ("dimension", "epoch", "dense_floor")}
        return json.dumps(stable, sort_keys=True)

    def for_collection(
        self, name: str, stored: dict[str, Any] | None, has_chunks: bool
    ) -> Embedder | None:
        """The embedder for a collection's stored model, None when searched lexically only.

        Raises `EmbeddingMismatch` when this index was opened with another model."""
        explicit = self.explicit
        if not stored:
            if explicit is not None and has_chunks:
                raise EmbeddingMismatch(
                    f"collection {name!r} holds documents without vectors, but this index was "
                    f"opened with embedding model {explicit.name!r}",
                    REEMBED_HINT.format(name=name),
                )
            return None
        if explicit is not None:
            dimension = stored.get("dimension")
            if explicit.name == stored.get("model"):  # a service's dimension: the stored one
                explicit.adopt_dimension(dimension)
            known = getattr(explicit, "dimension", None)
            if explicit.name != stored.get("model") or (known and dimension and known != dimension):
                raise EmbeddingMismatch(
                    f"collection {name!r} holds vectors of model {stored.get('model')!r} "
                    f"({dimension} dimensions); this index was opened with "
                    f"{explicit.name!r} ({known} dimensions)",
                    f"open it with the same model, or {REEMBED_HINT.format(name=name)}",
                )
            return explicit
        if self.lexical_only:
            return None
        key = self._key(stored)
        with self._lock:
            if key not in self._by_config:
                self._by_config[key] = embedder_from_config(stored)
            return self._by_config[key]

    def for_write(
        self, name: str, config: dict[str, Any], has_chunks: bool
    ) -> tuple[Embedder | None, dict[str, Any] | None]:
        """The embedder a write into collection `name` (of `config`) uses, and the config it
        must store with the write when an empty lexical collection gains vectors (else None):
        one with no model takes the model this index was opened with, if one was named.

        Raises `EmbeddingMismatch` rather than let a write silently lack vectors."""
        stored = config.get("embedding")
        if stored and self.lexical_only:
            raise EmbeddingMismatch(
                f"collection {name!r} holds vectors of {stored.get('model')!r}"
                " but this index was opened without an embedding model",
                "open the index with embedder='auto' (the default) to add documents",
            )
        if not stored and not has_chunks and self.explicit is not None:
            return self.explicit, {**config, "embedding": embedding_config(self.explicit)}
        return self.for_collection(name, stored, has_chunks), None

    def remember(self, embedder: Embedder) -> None:
        with self._lock:
            self._by_config[self._key(embedding_config(embedder))] = embedder

    def query_vector(self, embedder: Embedder, text: str) -> np.ndarray:
        """A query's vector, remembered (apps repeat queries); raises `EmbeddingError`."""
        key = (embedder.name, text)
        vector = self._queries.get(key)
        if vector is None:
            with timed("embed"):  # a search's query-embedding stage (ragloom.timing)
                vector = embedder.embed_query(text)
            with self._lock:
                if len(self._queries) >= QUERY_CACHE:
                    self._queries.pop(next(iter(self._queries)))
                self._queries[key] = vector
        return vector

    def has_query(self, embedder: Embedder, text: str) -> bool:
        """Whether the query's vector is remembered (no embedding to wait for)."""
        return (embedder.name, text) in self._queries

    def remember_queries(self, embedder: Embedder, texts: Sequence[str]) -> None:
        """Embed the queries not yet remembered in one call (query variants)."""
        missing = [t for t in dict.fromkeys(texts) if (embedder.name, t) not in self._queries]
        if not missing:
            return
        vectors = embedder.embed(missing)
        with self._lock:
            for text, vector in zip(missing, vectors):
                if len(self._queries) >= QUERY_CACHE:
                    self._queries.pop(next(iter(self._queries)))
                self._queries[(embedder.name, text)] = vector

    def clear_queries(self) -> None:
        with self._lock:
            self._queries.clear()


class QueryVectors:
    """One request's query vectors: each (model, text) embedded at most once, a failure
    remembered so that other collections of the same request do not wait for it again."""

    def __init__(self, models: Embedders) -> None:
        self.models = models
        self._failed: dict[tuple[str, str], EmbeddingError] = {}

    def waits(self, embedder: Embedder, text: str) -> bool:
        """Whether getting the query's vector means embedding it now."""
        return (embedder.name, text) not in self._failed and not self.models.has_query(
            embedder, text
        )

    def get(self, embedder: Embedder, text: str) -> np.ndarray:
        key = (embedder.name, text)
        if key in self._failed:
            raise self._failed[key]
        try:
            return self.models.query_vector(embedder, text)
        except EmbeddingError as exc:
            self._failed[key] = exc
            raise
