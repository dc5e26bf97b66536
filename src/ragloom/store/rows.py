"""Row logic both stores share (the SQL stays in each): a collection's stored settings (its
configuration as JSON, its model's dimension and vector epoch), a document's row, and the
vectors a write stores (checked against the collection's dimension, which the first vectors
set)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np
import orjson

from ragloom.errors import InputError
from ragloom.store.document_text import document_gaps
from ragloom.store.records import NewDocument

VECTOR_CACHE_LIMIT = 20_000  # vectors of deleted chunks kept for re-adds (about 30 MB)


def to_json(value: Any) -> str:
    """A configuration or metadata as the stores keep it (sorted keys; `{}` when empty)."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True) if value else "{}"


def from_json(text: str) -> Any:
    """A stored metadata text, parsed with orjson (a hit's metadata in a sixth of the standard
    parser's time), or with the standard parser for what orjson would not read exactly: an
    integer beyond 64 bits (orjson makes it a float; a run of 19 digits sends the text to the
    standard parser) or a literal it refuses (NaN)."""
    if _LONG_DIGITS.search(text) is None:
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
    return json.loads(text)


_LONG_DIGITS = re.compile(r"\d{19}")


@lru_cache(maxsize=256)
def parse_config(text: str) -> dict[str, Any]:
    """A stored configuration, parsed once per distinct text (do not modify it)."""
    return json.loads(text)


def epoch_of(config: dict[str, Any]) -> int:
    """Which embedding generation the collection's vectors belong to (a new model: +1)."""
    return int((config.get("embedding") or {}).get("epoch", 0))


def dimension_of(config: dict[str, Any]) -> int | None:
    """The collection's vector dimension, None until its first vectors set it."""
    value = (config.get("embedding") or {}).get("dimension")
    return int(value) if value else None


def with_dimension(config: dict[str, Any], dimension: int) -> dict[str, Any]:
    """The configuration with its model's dimension set."""
    return {**config, "embedding": {**(config.get("embedding") or {}), "dimension": dimension}}


def chunk_vectors_dimension(
    config: dict[str, Any], vectors: Sequence[np.ndarray]
) -> tuple[int | None, dict[str, Any] | None]:
    """The dimension new chunks' vectors must have, and the configuration to store when
    they are the collection's first (else None); a vector of another size is refused."""
    dimension, changed = dimension_of(config), None
    if vectors and dimension is None:
        dimension = int(vectors[0].shape[0])
        changed = with_dimension(config, dimension)
    for vector in vectors:
        if vector.shape != (dimension,):
            raise InputError(
                f"a vector has {vector.shape[0]} dimensions; the collection's model has {dimension}"
            )
    return dimension, changed


def checked_vectors(
    config: dict[str, Any], vectors: np.ndarray
) -> tuple[np.ndarray, dict[str, Any] | None]:
    """Vectors for pending chunks as float32, and the configuration to store when they are
    the collection's first (else None); vectors of another dimension are refused."""
    dimension, changed = dimension_of(config), None
    vectors = np.asarray(vectors, np.float32)
    if dimension is None:
        dimension = int(vectors.shape[1])
        changed = with_dimension(config, dimension)
    if vectors.shape[1] != dimension:
        raise InputError(f"vectors have {vectors.shape[1]} dimensions, expected {dimension}")
    return vectors, changed


def document_row(new: NewDocument, collection_id: int, indexed_at: float) -> tuple[Any, ...]:
    """A document's row after its id: collection, document id, source, title, metadata,
    content hash, text length, the text its chunks leave out, and when it was indexed."""
    d = new.document
    spans = [(c.start, c.end, c.text) for c in new.chunks]
    return (
        collection_id,
        d.id,
        d.source,
        d.title,
        new.metadata_json or to_json(d.metadata),
        new.content_hash,
        len(d.text),
        document_gaps(d.text, spans),
        indexed_at,
    )
