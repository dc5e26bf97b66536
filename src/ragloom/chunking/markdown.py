"""Lines that hard-separate passages: scene breaks (`***`, `* * *`, `---`, `###`), and in
Markdown ATX headings, thematic breaks and fenced code blocks."""

from __future__ import annotations

import re
from typing import NamedTuple

# A run of at least three identical break characters, optionally spaced out, alone on a line.
_BREAK_BODY = r"[^\S\n]*([*\-_#])(?:[^\S\n]*\1){2,}[^\S\n]*"
_BREAK_LINE = re.compile(_BREAK_BODY)
# Anchored on a literal newline (not `^`), so `re` can jump from line to line at C speed.
_BREAK_AFTER_NEWLINE = re.compile(rf"\n{_BREAK_BODY}(?=\n|\Z)")


def is_scene_break(line: str) -> bool:
    """Whether one line (without its newline) is a scene / thematic break."""
    return _BREAK_LINE.fullmatch(line) is not None


def scene_breaks(text: str) -> list[tuple[int, int]]:
    """(line start, line end) of every scene-break line, in document order."""
    if "\n" not in text:  # one line (most short documents): a break only if it is all break
        return [(0, len(text))] if _BREAK_LINE.fullmatch(text) else []
    # Prefixing "\n" makes the first line look like every other; offsets shift back by one.
    return [(m.start(), m.end() - 1) for m in _BREAK_AFTER_NEWLINE.finditer("\n" + text)]


# Only lines starting (after indentation) with one of these can be structural. The pattern is
# anchored on a literal newline (not `^`) so `re` can jump from line to line at C speed.
_CANDIDATE = re.compile(r"\n([^\S\n]*[#*\-_`~][^\n]*)")
_FENCE_OPEN = re.compile(r" {0,3}(`{3,}|~{3,})(.*)")
_FENCE_CLOSE = re.compile(r" {0,3}(`{3,}|~{3,})[^\S\n]*")
_HEADING = re.compile(r" {0,3}(#{1,6})(?:[^\S\n](.*))?")
_CLOSING_HASHES = re.compile(r"(?:^|\s)#+\Z")


class Mark(NamedTuple):
    """A structural line: a heading (level 1-6, title) or a break (level 0)."""

    start: int
    end: int
    level: int
    title: str


def heading_title(raw: str | None) -> str:
    """Heading text without the optional closing `#` sequence and outer whitespace."""
    if not raw:
        return ""
    return _CLOSING_HASHES.sub("", raw.strip()).strip()


def markdown_marks(text: str) -> tuple[list[Mark], list[tuple[int, int]]]:
    """Headings and breaks outside code fences, plus the (start, end) of every fence."""
    marks: list[Mark] = []
    fences: list[tuple[int, int]] = []
    fence_char = ""
    fence_len = 0
    fence_start = 0
    # Prefixing "\n" makes the first line look like every other; group 1 then sits at the
    # line's own offsets shifted by one.
    for m in _CANDIDATE.finditer("\n" + text):
        line = m.group(1)
        line_start, line_end = m.start(1) - 1, m.end(1) - 1
        if fence_char:
            close = _FENCE_CLOSE.fullmatch(line)
            if close and close.group(1)[0] == fence_char and len(close.group(1)) >= fence_len:
                fences.append((fence_start, line_end))
                fence_char = ""
            continue
        lead = line.lstrip()[0]
        if lead in "`~":
            opening = _FENCE_OPEN.fullmatch(line)
            if opening and not (lead == "`" and "`" in opening.group(2)):
                fence_char, fence_len, fence_start = lead, len(opening.group(1)), line_start
            continue
        if is_scene_break(line):
            marks.append(Mark(line_start, line_end, 0, ""))
            continue
        heading = _HEADING.fullmatch(line) if lead == "#" else None
        if heading:
            title = heading_title(heading.group(2))
            if title:  # an empty `#` line is kept as plain content
                marks.append(Mark(line_start, line_end, len(heading.group(1)), title))
    if fence_char:  # an unclosed fence runs to the end of the document
        fences.append((fence_start, len(text)))
    return marks, fences
