"""Paragraph packing: group blank-line-separated paragraphs into chunks of bounded size."""

from __future__ import annotations

import re

from ragloom.chunking.sentences import SentenceIndex
from ragloom.chunking.spans import Span, trim
from ragloom.chunking.splitter import split_long

# One or more blank (whitespace-only) lines between two paragraphs.
_PARAGRAPH_GAP = re.compile(r"\n(?:[^\S\n]*\n)+")


def paragraph_spans(
    text: str, start: int, end: int, fences: list[Span] | tuple[Span, ...] = ()
) -> list[Span]:
    """Trimmed paragraphs of text[start:end]; blank lines inside a code fence don't split."""
    spans: list[Span] = []
    cursor = start
    for m in _PARAGRAPH_GAP.finditer(text, start, end):
        span = trim(text, cursor, m.start())
        if span is not None:
            spans.append(span)
        cursor = m.end()
    span = trim(text, cursor, end)
    if span is not None:
        spans.append(span)
    return _join_fenced(spans, fences) if fences else spans


def _join_fenced(spans: list[Span], fences: list[Span] | tuple[Span, ...]) -> list[Span]:
    """Merge paragraphs that lie inside the same code fence into one block."""
    out: list[Span] = []
    f = 0
    for start, end in spans:
        while f < len(fences) and fences[f][1] <= start:
            f += 1
        if out and f < len(fences) and fences[f][0] < start and out[-1][1] > fences[f][0]:
            out[-1] = (out[-1][0], end)
        else:
            out.append((start, end))
    return out


def pack_paragraphs(
    text: str,
    paragraphs: list[Span],
    max_chars: int,
    overlap: int,
    min_chars: int,
    sentences: SentenceIndex | None = None,
) -> list[Span]:
    """Greedily pack whole paragraphs up to max_chars; split only paragraphs that don't fit."""
    pieces: list[Span] = []
    open_start = open_end = -1  # the chunk still accepting paragraphs
    for start, end in paragraphs:
        if end - start > max_chars:
            floor = pieces[-1][1] if pieces else None
            if open_start >= 0:
                if open_end - open_start < min_chars:
                    start = open_start  # a short lead-in (e.g. a heading) joins the split
                else:
                    pieces.append((open_start, open_end))
            split = split_long(text, start, end, max_chars, overlap, min_chars, floor, sentences)
            pieces.extend(split[:-1])
            open_start, open_end = split[-1]  # the tail may take the next paragraphs
        elif open_start < 0:
            open_start, open_end = start, end
        elif end - open_start <= max_chars:
            open_end = end
        else:
            pieces.append((open_start, open_end))
            open_start, open_end = start, end
    if open_start >= 0:
        pieces.append((open_start, open_end))
    return pieces


def absorb_short(pieces: list[Span], max_chars: int, min_chars: int) -> list[Span]:
    """Merge pieces shorter than min_chars into a neighbour when the result still fits."""
    if len(pieces) < 2 or not [1 for start, end in pieces if end - start < min_chars]:
        return pieces
    backward: list[Span] = []
    for start, end in pieces:
        if backward and end - start < min_chars and end - backward[-1][0] <= max_chars:
            backward[-1] = (backward[-1][0], end)
        else:
            backward.append((start, end))
    out: list[Span] = []
    carry = -1  # start of a short piece waiting to join the next one
    for i, (start, end) in enumerate(backward):
        if carry >= 0:
            start, carry = carry, -1
        nxt = backward[i + 1] if i + 1 < len(backward) else None
        if nxt is not None and end - start < min_chars and nxt[1] - start <= max_chars:
            carry = start
            continue
        out.append((start, end))
    return out
