"""A stored document's text rebuilt from its chunks and the gaps between them (each store
keeps a document's text once: in its chunks, plus what no chunk covers)."""

from __future__ import annotations

import json
from collections.abc import Iterable

from ragloom.store.sqlite.snapshot import stitch


def rebuild_text(gaps: str | None, chunks: Iterable[tuple[int, str]], length: int) -> str:
    """The text from the gaps (JSON [[start, text], ...] or None) and (start, text) chunks."""
    pieces = [(start, text) for start, text in json.loads(gaps)] if gaps else []
    pieces += list(chunks)
    return stitch(pieces, int(length))
