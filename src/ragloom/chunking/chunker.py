"""`chunk_text`: document text in, exact-offset chunk spans out (pure, no I/O)."""

from __future__ import annotations

from typing import Any, NamedTuple

from ragloom.chunking.breaks import scene_breaks
from ragloom.chunking.code import chunk_code, language_for
from ragloom.chunking.policy import ChunkPolicy
from ragloom.chunking.prose import (
    SentenceIndex,
    absorb_short,
    pack_paragraphs,
    paragraph_spans,
    trim,
)
from ragloom.chunking.sections import fold_short_parents, split_sections
from ragloom.chunking.structured import split_structured
from ragloom.types import ChunkSpan, Structure

DEFAULT_POLICY = ChunkPolicy()


def _metadata(mode: str) -> dict[str, Any]:
    """Metadata of a whole-document chunk: an empty heading path in markdown mode."""
    return {"headings": []} if mode == "markdown" else {}


class Chunked(NamedTuple):
    """A document's chunk spans, and how many fragments min_chars dropped from it."""

    spans: list[ChunkSpan]
    fragments: int = 0


def chunk_text(
    text: str, policy: ChunkPolicy = DEFAULT_POLICY, source: str | None = None
) -> list[ChunkSpan]:
    """Cut a document into trimmed, bounded, ordered spans for indexing.

    `source` (a path or file name) names the file in warnings and, in code mode, gives
    the language when the policy does not.
    """
    return split_document(text, policy, source).spans


def split_document(
    text: str,
    policy: ChunkPolicy = DEFAULT_POLICY,
    source: str | None = None,
    title: str | None = None,
    structure: Structure | None = None,
) -> Chunked:
    """`chunk_text` plus the count of dropped fragments; a titled document never vanishes.

    A document with a title but no chunk of its own (an empty or blank body) becomes one
    empty chunk at offset 0, so that its title (indexed with every chunk) is searchable.
    A converted document's `structure` (pages, sections...) shapes and places its chunks
    (`ragloom.chunking.structured`).
    """
    if structure is not None and policy.mode != "code":
        chunked = Chunked(*split_structured(text, structure, policy))
    else:
        chunked = _split(text, policy, source)
    if not chunked.spans and title is not None and title.strip():
        return Chunked([ChunkSpan("", 0, 0, _metadata(policy.mode))], chunked.fragments)
    return chunked


def _split(text: str, policy: ChunkPolicy, source: str | None) -> Chunked:
    if policy.mode == "code":
        language = policy.language or language_for(source)
        return Chunked(chunk_code(text, language, policy.max_chars, policy.overlap, source))
    whole = trim(text, 0, len(text))
    if whole is None:
        return Chunked([])
    start, end = whole
    if policy.max_chars == 0 or (
        # prose that fits in one chunk and has no scene break: the one span the general
        # path would find, without building sections and paragraphs
        policy.mode == "prose" and end - start <= policy.max_chars and not scene_breaks(text)
    ):
        return Chunked([ChunkSpan(text[start:end], start, end, _metadata(policy.mode))])
    # A document shorter than min_chars is not a fragment: keep all of it.
    min_chars = policy.min_chars if whole[1] - whole[0] >= policy.min_chars else 0
    sections, fences = split_sections(text, policy.mode)
    sentences = SentenceIndex(text)
    found: list[tuple[int, int, tuple[str, ...]]] = []
    for section in fold_short_parents(sections, min_chars):
        if section.end - section.start <= policy.max_chars:  # fits: packing would keep it whole
            found.append((section.start, section.end, section.headings))
            continue
        paragraphs = paragraph_spans(text, section.start, section.end, fences)
        pieces = pack_paragraphs(
            text, paragraphs, policy.max_chars, policy.overlap, min_chars, sentences
        )
        for start, end in absorb_short(text, pieces, policy.max_chars, min_chars):
            found.append((start, end, section.headings))
    kept = [piece for piece in found if piece[1] - piece[0] >= min_chars]
    # Never lose a whole document to fragment dropping: if nothing survives, keep the pieces.
    dropped = len(found) - len(kept) if kept else 0
    if policy.mode == "markdown":
        return Chunked(
            [
                ChunkSpan(text[start:end], start, end, {"headings": list(headings)})
                for start, end, headings in (kept or found)
            ],
            dropped,
        )
    spans = [ChunkSpan(text[start:end], start, end, {}) for start, end, _ in (kept or found)]
    return Chunked(spans, dropped)
