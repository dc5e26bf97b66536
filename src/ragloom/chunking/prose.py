"""Paragraph packing: group blank-line-separated paragraphs into chunks of bounded size."""

from __future__ import annotations

import re

from ragloom.chunking.sentences import SentenceIndex
from ragloom.chunking.spans import Span, skip_space, trim
from ragloom.chunking.splitter import first_start, split_long

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
    """Greedily pack whole paragraphs up to max_chars; split only paragraphs that don't fit.

    Every piece after the first starts up to `overlap` characters before the previous one
    ends (see `lead_in`), whether the boundary falls between paragraphs or inside one.
    """
    sentences = sentences or SentenceIndex(text)
    starts = [start for start, _ in paragraphs]
    pieces: list[Span] = []
    open_start = open_end = -1  # the chunk still accepting paragraphs
    for start, end in paragraphs:
        if open_start >= 0 and end - open_start <= max_chars:
            open_end = end  # the paragraph joins the open chunk
            continue
        lead, floor = start, None  # where the paragraph's chunk starts; the previous end
        if open_start >= 0:
            if end - start > max_chars and open_end - open_start < min_chars:
                lead = open_start  # a short lead-in (e.g. a heading) joins the split
                floor = pieces[-1][1] if pieces else None
            else:
                pieces.append((open_start, open_end))
                floor = open_end
                if overlap:
                    fit = end - max_chars if end - start <= max_chars else None
                    shared = lead_in(text, open_start, open_end, overlap, fit, sentences, starts)
                    lead = start if shared is None else shared
        if end - lead > max_chars:
            split = split_long(
                text, lead, end, max_chars, overlap, min_chars, floor, sentences, starts
            )
            pieces.extend(split[:-1])
            open_start, open_end = split[-1]  # the tail may take the next paragraphs
        else:
            open_start, open_end = lead, end
    if open_start >= 0:
        pieces.append((open_start, open_end))
    return pieces


def lead_in(
    text: str,
    prev_start: int,
    prev_end: int,
    overlap: int,
    fit: int | None,
    sentences: SentenceIndex,
    paragraph_starts: list[int],
) -> int | None:
    """Where the chunk after [prev_start, prev_end) starts so that the two overlap.

    The earliest sentence or paragraph start within `overlap` characters before prev_end,
    else the earliest word start there; None when there is none. `fit` is the earliest
    start that keeps the next paragraph whole (None: it is split anyway): the overlap is
    shortened to respect it, and dropped when even the shortest would split the paragraph.
    """
    low = max(prev_end - overlap, prev_start + 1)
    if fit is not None:
        low = max(low, fit)
    return first_start(text, low, prev_end, sentences.bounds()[1], paragraph_starts)


def absorb_short(text: str, pieces: list[Span], max_chars: int, min_chars: int) -> list[Span]:
    """Merge pieces shorter than min_chars into a neighbour when the result still fits.

    A short piece that overlaps the piece before it gives up that overlap when only then
    does it fit together with the next piece (a fragment is worse than a missing overlap).
    """
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
        if nxt is not None and end - start < min_chars:
            begin = start
            if nxt[1] - begin > max_chars and out and out[-1][1] > begin:
                begin = skip_space(text, out[-1][1], nxt[1])  # drop the overlap
            if nxt[1] - begin <= max_chars:
                carry = begin
                continue
        out.append((start, end))
    return out
