"""What goes into a store and what comes out of it: plain records, no storage logic."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ragloom.text.numbering import ChunkTerms
from ragloom.types import Document

__all__ = ["ChunkTerms"]  # the flat terms of a write's chunks travel beside its documents


@dataclass(frozen=True)
class StoredDocument:
    """A document row as the store keeps it (without its text)."""

    doc_id: str
    collection: str
    source: str | None
    title: str | None
    metadata: dict[str, Any]
    content_hash: str
    chunks: int
    indexed_at: float
    pending: int = 0  # chunks still waiting for a vector


@dataclass(slots=True)  # not frozen: ten are made per search, and frozen inits are slow
class StoredChunk:
    """A chunk row joined with its document, ready to become a hit."""

    row_id: int
    chunk_id: str
    document_id: str
    n: int
    text: str
    start: int
    end: int
    metadata: dict[str, Any]
    source: str | None
    title: str | None
    collection: str


@dataclass(eq=False, slots=True)  # not frozen: made once per chunk, and frozen inits are slow
class NewChunk:
    """A chunk to store: its span, metadata, index terms (repeats kept; or given for the
    whole write as `ChunkTerms`) and vector (None: pending, to be filled when the embedding
    service answers)."""

    n: int
    text: str
    start: int
    end: int
    metadata: dict[str, Any]
    terms: list[str] = field(default_factory=list)
    vector: np.ndarray | None = None


@dataclass(eq=False, slots=True)
class NewDocument:
    """A document to store (replacing any stored document of the same id) with its chunks."""

    document: Document
    content_hash: str
    chunks: list[NewChunk]
    metadata_json: str | None = None  # the document's metadata as canonical JSON, if known


NewDocuments = Sequence[NewDocument]  # what one `Write.put` stores


@dataclass
class WriteOutcome:
    """What a store write did."""

    documents: int = 0
    chunks: int = 0
    removed_chunks: int = 0
    pending: int = 0  # chunks stored without a vector
    rows: list[int] = field(default_factory=list)  # row ids of the chunks added


@dataclass(frozen=True)
class CollectionInfo:
    """A collection's id and stored configuration."""

    id: int
    name: str
    config: dict[str, Any]
