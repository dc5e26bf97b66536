"""Offset helpers shared by the chunkers: trimming spans without copying the text."""

from __future__ import annotations

import re

_NON_SPACE = re.compile(r"\S")
_LAST_NON_SPACE = re.compile(r".*\S", re.DOTALL)

Span = tuple[int, int]


def skip_space(text: str, start: int, end: int) -> int:
    """Index of the first non-whitespace character in [start, end), or `end` if none."""
    m = _NON_SPACE.search(text, start, end)
    return m.start() if m else end


def trim(text: str, start: int, end: int) -> Span | None:
    """Shrink [start, end) to exclude outer whitespace; None when nothing is left."""
    if start < end and not text[start].isspace() and not text[end - 1].isspace():
        return start, end  # the common case, without a regex call
    m = _NON_SPACE.search(text, start, end)
    if m is None:
        return None
    first = m.start()
    last = _LAST_NON_SPACE.match(text, first, end)
    assert last is not None  # text[first] is not whitespace
    return first, last.end()
