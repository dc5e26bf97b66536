"""Enrichers: pluggable steps that add metadata to chunks at ingest.

An enricher is any callable `(document, span) -> dict` whose result is merged into the
chunk's metadata (usable in filters and boosts). Its `name` (or function name) and optional
`fingerprint()` are part of each document's content hash, so changing the enrichers
re-indexes documents on their next indexing.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from ragloom.errors import InputError
from ragloom.types import ChunkSpan, Document

Enricher = Callable[[Document, ChunkSpan], dict[str, Any]]


def enrich_span(document: Document, span: ChunkSpan, enrichers: Sequence[Enricher]) -> ChunkSpan:
    """The span with every enricher's metadata merged in (later enrichers win)."""
    metadata = dict(span.metadata)
    for enricher in enrichers:
        extra = enricher(document, span)
        if not isinstance(extra, dict):
            raise InputError(
                f"enricher {_name(enricher)} returned {type(extra).__name__}, not dict"
            )
        metadata.update(extra)
    return replace(span, metadata=metadata)


def _name(enricher: Enricher) -> str:
    return str(
        getattr(enricher, "name", None) or getattr(enricher, "__name__", type(enricher).__name__)
    )


def enrichers_fingerprint(enrichers: Sequence[Enricher]) -> str:
    """Stable description of the enrichers in use (empty when there are none)."""
    if not enrichers:
        return ""
    parts = []
    for enricher in enrichers:
        fingerprint = getattr(enricher, "fingerprint", None)
        parts.append([_name(enricher), fingerprint() if callable(fingerprint) else None])
    return json.dumps(parts, sort_keys=True, default=str)
