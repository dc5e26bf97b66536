"""A stored document's text: the gaps its chunks leave, the text rebuilt from chunks and gaps
(each store keeps a document's text once: in its chunks, plus what no chunk covers), and the
fingerprint of what the embedding model reads for a chunk."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from typing import Any


def stitch(pieces: list[tuple[int, str]], length: int) -> str:
    """A document's text from its chunks and gaps (spans may overlap; each is exact)."""
    out: list[str] = []
    pos = 0
    for start, text in sorted(pieces, key=lambda p: p[0]):
        end = start + len(text)
        if end > pos:
            out.append(text[pos - start :] if start < pos else text)
            pos = end
    text = "".join(out)
    return text[:length]


def rebuild_text(gaps: str | None, chunks: Iterable[tuple[int, str]], length: int) -> str:
    """The text from the gaps (JSON [[start, text], ...] or None) and (start, text) chunks."""
    pieces = [(start, text) for start, text in json.loads(gaps)] if gaps else []
    pieces += list(chunks)
    return stitch(pieces, int(length))


def text_hash(title: str | None, text: str) -> bytes:
    """Fingerprint of what the embedding model reads for a chunk."""
    embedded = f"{title}\n{text}" if title else text
    return hashlib.blake2b(embedded.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def document_gaps(text: str, spans: Sequence[tuple[int, int, str]]) -> str | None:
    """What the chunks do not cover of a document's text, as JSON [[start, text], ...].

    With the gaps, the document's text is rebuilt from its chunks (stored once); if the
    chunks do not match the text at their offsets, the whole text is kept as one gap."""
    gaps: list[list[Any]] = []
    pos = 0
    for start, end, chunk in sorted(spans):
        if text[start:end] != chunk:
            return json.dumps([[0, text]], ensure_ascii=False)
        if start > pos:
            gaps.append([pos, text[pos:start]])
        pos = max(pos, end)
    if pos < len(text):
        gaps.append([pos, text[pos:]])
    return json.dumps(gaps, ensure_ascii=False) if gaps else None
