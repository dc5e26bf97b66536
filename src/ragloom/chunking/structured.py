"""Chunks of a converted document (`Document.structure`): its sections and units honoured,
each chunk told where it lies.

Section headings are hard boundaries, as Markdown headings are, and give each chunk its
`headings` path; slides and notebook cells are hard boundaries too; pages are not (a chunk
may run over a page break). Code cells are chunked as code. Every chunk gets `page` (the
first page it is on; `pages` lists them when it spans more than one), `slide` or `cell`.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Any

from ragloom.chunking.code import chunk_code
from ragloom.chunking.markdown import Mark
from ragloom.chunking.policy import ChunkPolicy
from ragloom.chunking.prose import (
    SentenceIndex,
    absorb_short,
    pack_paragraphs,
    paragraph_spans,
    trim,
)
from ragloom.chunking.sections import Section, build_sections, fold_short_parents
from ragloom.types import ChunkSpan, Structure

HARD_UNITS = ("slide", "cell")


def _marks(text: str, structure: Structure) -> list[Mark]:
    marks = [Mark(at, at, level, title) for at, level, title in structure.headings]
    if structure.unit in HARD_UNITS:
        heads = {m.start for m in marks}
        marks += [Mark(at, at, -1, "") for at in structure.starts if at not in heads]
    return sorted((m for m in marks if 0 <= m.start <= len(text)), key=lambda m: m.start)


def _unit_of(starts: tuple[int, ...], offset: int) -> int:
    """The 1-based unit holding `offset` (0 when it lies before the first unit)."""
    return bisect_right(starts, offset)


def _placed(structure: Structure, start: int, end: int) -> dict[str, Any]:
    """`page`/`pages`, `slide` or `cell` of the span [start, end)."""
    if not structure.starts:
        return {}
    first = max(_unit_of(structure.starts, start), 1)
    last = max(_unit_of(structure.starts, max(start, end - 1)), first)
    if structure.numbers:
        first, last = structure.numbers[first - 1], structure.numbers[last - 1]
    out: dict[str, Any] = {structure.unit: first}
    if structure.unit == "page" and last > first:
        out["pages"] = list(range(first, last + 1))
    return out


def _code_cell(structure: Structure, section: Section) -> bool:
    if structure.unit != "cell" or not structure.kinds:
        return False
    at = _unit_of(structure.starts, section.start) - 1
    return 0 <= at < len(structure.kinds) and structure.kinds[at] == "code"


def _pieces(
    text: str, section: Section, policy: ChunkPolicy, min_chars: int, sentences: SentenceIndex
) -> list:
    if policy.max_chars == 0 or section.end - section.start <= policy.max_chars:
        return [(section.start, section.end)]
    paragraphs = paragraph_spans(text, section.start, section.end)
    pieces = pack_paragraphs(
        text, paragraphs, policy.max_chars, policy.overlap, min_chars, sentences
    )
    return absorb_short(text, pieces, policy.max_chars, min_chars)


def split_structured(
    text: str, structure: Structure, policy: ChunkPolicy
) -> tuple[list[ChunkSpan], int]:
    """(spans, fragments dropped): prose packing within sections, code cells as code."""
    whole = trim(text, 0, len(text))
    if whole is None:
        return [], 0
    min_chars = policy.min_chars if whole[1] - whole[0] >= policy.min_chars else 0
    sections = fold_short_parents(build_sections(text, _marks(text, structure)), min_chars)
    sentences = SentenceIndex(text)
    found: list[tuple[int, int, tuple[str, ...], dict[str, Any]]] = []
    for section in sections:
        if _code_cell(structure, section):
            body = text[section.start : section.end]
            for span in chunk_code(body, structure.language, policy.max_chars, policy.overlap):
                start, end = section.start + span.start, section.start + span.end
                found.append((start, end, section.headings, dict(span.metadata)))
            continue
        for start, end in _pieces(text, section, policy, min_chars, sentences):
            found.append((start, end, section.headings, {}))
    kept = [p for p in found if p[3] or p[1] - p[0] >= min_chars] or found  # never lose all
    titled = bool(structure.headings)
    spans = []
    for start, end, headings, extra in kept:
        metadata = {**extra, **_placed(structure, start, end)}
        if titled:
            metadata["headings"] = list(headings)
        spans.append(ChunkSpan(text[start:end], start, end, metadata))
    return spans, len(found) - len(kept)
