"""A changed document's chunks before they are stored: split by its policy, enriched, and
the index terms of every chunk computed for the whole batch in one pass."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ragloom.chunking import ChunkPolicy
from ragloom.enrich import Enricher, enrich_span
from ragloom.segments.postings import concat_ranges
from ragloom.store.records import ChunkTerms
from ragloom.text import Tokenizer
from ragloom.types import ChunkSpan, Document


@dataclass(frozen=True)
class Chunked:
    """A batch's documents with their chunks' spans, the index terms of all those chunks in
    order, and how many fragments `min_chars` dropped."""

    prepared: list[tuple[Document, list[ChunkSpan]]]
    terms: ChunkTerms
    fragments: int


def chunked(
    documents: Sequence[Document],
    policies: dict[str, ChunkPolicy],
    enrichers: Sequence[Enricher],
    tokenizer: Tokenizer,
    title_weight: int,
) -> Chunked:
    """Split each document by its policy (`policies`, by id), enrich the spans, and index
    the terms of every chunk."""
    from ragloom.chunking.chunker import split_document  # (not loaded for a search)

    prepared, fragments = [], 0
    for doc in documents:
        spans, dropped = split_document(
            doc.text, policies[doc.id], doc.source, doc.title, doc.structure
        )
        fragments += dropped
        if enrichers:
            spans = [enrich_span(doc, span, enrichers) for span in spans]
        prepared.append((doc, spans))
    return Chunked(prepared, chunk_terms(prepared, tokenizer, title_weight), fragments)


def chunk_terms(
    prepared: Sequence[tuple[Document, Sequence[Any]]], tokenizer: Tokenizer, title_weight: int
) -> ChunkTerms:
    """The index terms of every chunk of `prepared` (documents and their spans), in order:
    a chunk's own terms, then its document's title terms `title_weight` times."""
    texts: list[str] = [""]  # text 0: the title of documents without one
    own: list[int] = []  # which text is each chunk's own
    title: list[int] = []  # which text is its document's title
    for doc, spans in prepared:
        first = len(texts)
        texts.extend(span.text for span in spans)
        own.extend(range(first, len(texts)))
        if doc.title:
            texts.append(doc.title)
        title.extend([len(texts) - 1 if doc.title else 0] * len(spans))
    numbers, counts, names = tokenizer.numbered(texts)
    starts = np.cumsum(counts) - counts
    mine, titles = np.array(own, np.int64), np.array(title, np.int64)
    pieces = [mine] + [titles] * title_weight  # per chunk: its text, then the title w times
    positions = concat_ranges(
        np.column_stack([starts[p] for p in pieces]).ravel(),
        np.column_stack([counts[p] for p in pieces]).ravel(),
    )
    lengths = counts[mine] + title_weight * counts[titles]
    return ChunkTerms(numbers[positions], lengths, names)
