"""Sections, the stretches between hard boundaries that no chunk crosses, and the chunks cut
within them: for prose, Markdown and converted documents alike.

Scene breaks, Markdown headings, a converted document's section headings (`Document.structure`)
and its slides and notebook cells are hard boundaries; headings give each chunk its `headings`
path. Pages are not boundaries (a chunk may run over a page break). A converted document's code
cells are chunked as code. Its chunks are told where they lie: `page` (the first page they are
on; `pages` lists them when they span more than one), `slide` or `cell`.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Any, NamedTuple

from ragloom.chunking.code import chunk_code
from ragloom.chunking.markdown import Mark, markdown_marks, scene_breaks
from ragloom.chunking.policy import ChunkPolicy
from ragloom.chunking.prose import (
    SentenceIndex,
    Span,
    absorb_short,
    pack_paragraphs,
    paragraph_spans,
    trim,
)
from ragloom.types import ChunkSpan, Structure

HARD_UNITS = ("slide", "cell")
Found = tuple[int, int, tuple[str, ...], dict[str, Any]]  # a chunk's span, headings, metadata


class Section(NamedTuple):
    """A trimmed stretch of text, its heading path, and whether a heading ends it."""

    start: int
    end: int
    headings: tuple[str, ...]
    heading_follows: bool


def build_sections(text: str, marks: list[Mark]) -> list[Section]:
    """Cut the text at every mark: breaks are dropped, headings open a new section, cuts
    (level < 0: a slide or cell boundary) end one and go on under the same headings."""
    sections: list[Section] = []
    stack: list[tuple[int, str]] = []
    headings: tuple[str, ...] = ()
    cursor = 0
    for mark in marks:
        span = trim(text, cursor, mark.start)  # the section this mark closes
        if span is not None:
            sections.append(Section(span[0], span[1], headings, mark.level > 0))
        if mark.level == 0:  # break: the line itself belongs to no section
            cursor = mark.end
        elif mark.level < 0:  # cut: what follows is a new section under the same headings
            cursor = mark.start
        else:  # heading: its line is the first content of the new section
            while stack and stack[-1][0] >= mark.level:
                stack.pop()
            stack.append((mark.level, mark.title))
            headings = tuple(title for _, title in stack)
            cursor = mark.start
    span = trim(text, cursor, len(text))
    if span is not None:
        sections.append(Section(span[0], span[1], headings, False))
    return sections


def fold_short_parents(sections: list[Section], min_chars: int) -> list[Section]:
    """Join a too-short section (e.g. a bare `# Title`) onto the subsection right after it."""
    out: list[Section] = []
    carry: int | None = None  # start of a short parent waiting for its child
    for i, section in enumerate(sections):
        if carry is not None:
            section = section._replace(start=carry)
            carry = None
        nxt = sections[i + 1] if i + 1 < len(sections) else None
        if (
            nxt is not None
            and section.heading_follows
            and section.end - section.start < min_chars
            and len(nxt.headings) > len(section.headings)
            and nxt.headings[: len(section.headings)] == section.headings
        ):
            carry = section.start
            continue
        out.append(section)
    return out


def _marks(text: str, structure: Structure | None, mode: str) -> tuple[list[Mark], list[Span]]:
    """The hard boundaries of a document and its code-fence spans (Markdown's only)."""
    if structure is None and mode == "markdown":
        return markdown_marks(text)
    if structure is None:
        return [Mark(start, end, 0, "") for start, end in scene_breaks(text)], []
    marks = [Mark(at, at, level, title) for at, level, title in structure.headings]
    if structure.unit in HARD_UNITS:
        heads = {m.start for m in marks}
        marks += [Mark(at, at, -1, "") for at in structure.starts if at not in heads]
    return sorted((m for m in marks if 0 <= m.start <= len(text)), key=lambda m: m.start), []


def _unit_of(starts: tuple[int, ...], offset: int) -> int:
    """The 1-based unit holding `offset` (0 when it lies before the first unit)."""
    return bisect_right(starts, offset)


def _placed(structure: Structure | None, start: int, end: int) -> dict[str, Any]:
    """`page`/`pages`, `slide` or `cell` of the span [start, end) (none without units)."""
    if structure is None or not structure.starts:
        return {}
    first = max(_unit_of(structure.starts, start), 1)
    last = max(_unit_of(structure.starts, max(start, end - 1)), first)
    if structure.numbers:
        first, last = structure.numbers[first - 1], structure.numbers[last - 1]
    out: dict[str, Any] = {structure.unit: first}
    if structure.unit == "page" and last > first:
        out["pages"] = list(range(first, last + 1))
    return out


def _code_cell(structure: Structure | None, section: Section) -> bool:
    """Whether a section is a notebook's code cell (chunked as code)."""
    if structure is None or structure.unit != "cell" or not structure.kinds:
        return False
    at = _unit_of(structure.starts, section.start) - 1
    return 0 <= at < len(structure.kinds) and structure.kinds[at] == "code"


def split_sections(
    text: str, policy: ChunkPolicy, structure: Structure | None
) -> tuple[list[ChunkSpan], int]:
    """(spans, fragments dropped) of a prose or Markdown document, or of a converted one
    (`structure`): prose packing within each section, code cells as code."""
    whole = trim(text, 0, len(text))
    if whole is None:
        return [], 0
    start, end = whole
    if structure is None and (
        policy.max_chars == 0
        # prose that fits in one chunk and has no scene break: the one span the general
        # path would find, without building sections and paragraphs
        or (policy.mode == "prose" and end - start <= policy.max_chars and not scene_breaks(text))
    ):
        metadata: dict[str, Any] = {"headings": []} if policy.mode == "markdown" else {}
        return [ChunkSpan(text[start:end], start, end, metadata)], 0
    # A document shorter than min_chars is not a fragment: keep all of it.
    min_chars = policy.min_chars if end - start >= policy.min_chars else 0
    marks, fences = _marks(text, structure, policy.mode)
    sentences: SentenceIndex | None = None  # one sentence scan, made for the first split
    found: list[Found] = []
    for section in fold_short_parents(build_sections(text, marks), min_chars):
        if _code_cell(structure, section):
            language = structure.language if structure is not None else None
            body = text[section.start : section.end]
            for span in chunk_code(body, language, policy.max_chars, policy.overlap):
                start, end = section.start + span.start, section.start + span.end
                found.append((start, end, section.headings, dict(span.metadata)))
        elif policy.max_chars == 0 or section.end - section.start <= policy.max_chars:
            found.append((section.start, section.end, section.headings, {}))  # fits whole
        else:
            sentences = sentences or SentenceIndex(text)
            paragraphs = paragraph_spans(text, section.start, section.end, fences)
            pieces = pack_paragraphs(
                text, paragraphs, policy.max_chars, policy.overlap, min_chars, sentences
            )
            for start, end in absorb_short(text, pieces, policy.max_chars, min_chars):
                found.append((start, end, section.headings, {}))
    # Never lose a whole document to fragment dropping: if nothing survives, keep the pieces.
    kept = [p for p in found if p[3] or p[1] - p[0] >= min_chars] or found
    titled = bool(structure.headings) if structure is not None else policy.mode == "markdown"
    spans = []
    for start, end, headings, extra in kept:
        metadata = {**extra, **_placed(structure, start, end)}
        if titled:
            metadata["headings"] = list(headings)
        spans.append(ChunkSpan(text[start:end], start, end, metadata))
    return spans, len(found) - len(kept)
