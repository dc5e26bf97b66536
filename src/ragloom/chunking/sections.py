"""Sections: the stretches between hard boundaries (breaks, headings) that no chunk crosses."""

from __future__ import annotations

from typing import NamedTuple

from ragloom.chunking.breaks import scene_breaks
from ragloom.chunking.markdown import Mark, markdown_marks
from ragloom.chunking.prose import trim


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


def split_sections(text: str, mode: str) -> tuple[list[Section], list[tuple[int, int]]]:
    """Sections of the document for the given mode, plus code-fence spans (markdown only)."""
    if mode == "markdown":
        marks, fences = markdown_marks(text)
    else:
        marks = [Mark(start, end, 0, "") for start, end in scene_breaks(text)]
        fences = []
    return build_sections(text, marks), fences
