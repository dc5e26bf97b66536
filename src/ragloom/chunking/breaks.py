"""Scene breaks: lines like `***`, `* * *`, `---` or `###` that hard-separate passages."""

from __future__ import annotations

import re

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
