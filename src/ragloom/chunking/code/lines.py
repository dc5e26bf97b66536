"""Code without usable syntax: windows of whole lines, and token-safe cuts of long lines."""

from __future__ import annotations

import re

from ragloom.chunking.prose import Span, last_word_end, safe_hard_cut, trim

_LINE = re.compile(r"[^\n]*\n|[^\n]+")
# A position between a word character and a non-word one (either way round): a token edge.
_TOKEN_EDGE = re.compile(r"(?<=\w)(?=\W)|(?<=\W)(?=\w)")


def line_spans(text: str, start: int, end: int) -> list[Span]:
    """[start, end) cut into lines; each span keeps its newline so the spans tile the range."""
    return [(m.start(), m.end()) for m in _LINE.finditer(text, start, end)]


def token_cut(text: str, start: int, limit: int) -> int:
    """Best end in (start, limit] for a piece of one long line: after whitespace, else at a
    word/punctuation edge, else a forced cut that keeps combining marks together."""
    word = last_word_end(text, start, limit)
    if word is not None and word > start:
        return word
    edge = None
    for m in _TOKEN_EDGE.finditer(text, start + 1, limit + 1):
        edge = m.start()
    if edge is not None and edge > start:
        return edge
    return safe_hard_cut(text, start, limit)


def split_text(text: str, start: int, end: int, max_chars: int) -> list[Span]:
    """Pieces tiling [start, end), each at most max_chars once trimmed, cut at line ends,
    then at token edges inside lines longer than max_chars."""
    pieces: list[Span] = []
    for line_start, line_end in line_spans(text, start, end):
        span = trim(text, line_start, line_end)
        if span is None or span[1] - span[0] <= max_chars:
            pieces.append((line_start, line_end))
            continue
        pos, stop = span
        pieces.append((line_start, pos))  # leading indentation: whitespace only
        while stop - pos > max_chars:
            cut = token_cut(text, pos, pos + max_chars)
            pieces.append((pos, cut))
            pos = cut
        pieces.append((pos, line_end))
    return pieces


def line_windows(text: str, max_chars: int, overlap: int) -> list[Span]:
    """Trimmed windows of whole lines up to max_chars, each sharing up to `overlap`
    characters of whole lines with the one before; over-long lines cut at token edges."""
    atoms = [
        s for s in (trim(text, a, b) for a, b in split_text(text, 0, len(text), max_chars)) if s
    ]
    windows: list[Span] = []
    i = 0
    while i < len(atoms):
        j = i
        while j + 1 < len(atoms) and atoms[j + 1][1] - atoms[i][0] <= max_chars:
            j += 1
        windows.append((atoms[i][0], atoms[j][1]))
        if j + 1 >= len(atoms):
            break
        nxt = j + 1
        if overlap:  # step back over the last lines that fit in the overlap
            k = j
            while k > i and atoms[j][1] - atoms[k][0] <= overlap:
                k -= 1
            k += 1
            # only overlap when the next window still reaches a new line
            if k <= j and atoms[j + 1][1] - atoms[k][0] <= max_chars:
                nxt = k
        i = nxt
    return windows
