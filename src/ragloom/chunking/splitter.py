"""Splitting one over-long stretch into overlapping pieces at sentence or word boundaries."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence

from ragloom.chunking.sentences import (
    SentenceIndex,
    first_word_start,
    last_word_end,
    safe_hard_cut,
    sentence_bounds,
)
from ragloom.chunking.spans import Span, skip_space


def _choose_cut(
    text: str, pos: int, limit: int, floor: int, ends: list[int], half: int
) -> int | None:
    """Best piece end in (floor, limit]: a late sentence end, else a word end, else any end."""
    i = bisect_right(ends, limit) - 1
    sentence = ends[i] if i >= 0 and ends[i] > floor else None
    if sentence is not None and sentence > pos + half:
        return sentence
    word = last_word_end(text, pos, limit)
    return word if word is not None and word > floor else sentence


def first_start(
    text: str, low: int, high: int, starts: list[int], paragraph_starts: Sequence[int] = ()
) -> int | None:
    """Earliest sentence or paragraph start in [low, high), else the earliest word start."""
    if low >= high:
        return None
    found = [
        bounds[i]
        for bounds in (starts, paragraph_starts)
        for i in (bisect_left(bounds, low),)
        if i < len(bounds) and bounds[i] < high
    ]
    return min(found) if found else first_word_start(text, low, high)


def _overlap_start(
    text: str, pos: int, cut: int, overlap: int, starts: list[int], paragraph_starts: Sequence[int]
) -> int | None:
    """Earliest sentence or paragraph start (else word start) within `overlap` chars before
    `cut`."""
    return first_start(text, max(cut - overlap, pos + 1), cut, starts, paragraph_starts)


def split_long(
    text: str,
    start: int,
    end: int,
    max_chars: int,
    overlap: int,
    min_chars: int,
    floor: int | None = None,
    sentences: SentenceIndex | None = None,
    paragraph_starts: Sequence[int] = (),
) -> list[Span]:
    """Cut trimmed text[start:end] into pieces of <= max_chars that overlap by <= overlap.

    `floor` is the end of the piece emitted just before (when `start` reaches back into
    it): every piece must end beyond it so the output stays in document order.
    `sentences` shares one sentence scan between all the splits of a document;
    `paragraph_starts` (sorted) are preferred overlap starts as much as sentence starts.
    """
    ends, starts = sentences.bounds() if sentences else sentence_bounds(text, start, end)
    half = max_chars // 2
    pieces: list[Span] = []
    pos = start  # start of the piece being cut
    floor = start if floor is None or floor < start else floor  # previous piece end
    overlapped = pos < floor  # whether pos reaches back into the previous piece
    while end - pos > max_chars:
        limit = pos + max_chars
        # Leave at least min_chars for the last piece when a boundary allows it.
        preferred = end - min_chars if end - min_chars < limit else limit
        cut = _choose_cut(text, pos, preferred, floor, ends, half) if preferred > floor else None
        if cut is None and preferred < limit:
            cut = _choose_cut(text, pos, limit, floor, ends, half)
        if cut is None and overlapped:  # the overlap left no room: restart without it
            pos = skip_space(text, floor, end)
            if end - pos <= max_chars:
                break
            limit = pos + max_chars
            cut = _choose_cut(text, pos, limit, floor, ends, half)
        if cut is None:  # a single word longer than max_chars
            cut = safe_hard_cut(text, pos, limit)
        pieces.append((pos, cut))
        floor = cut
        shifted = (
            _overlap_start(text, pos, cut, overlap, starts, paragraph_starts) if overlap else None
        )
        overlapped = shifted is not None
        pos = shifted if shifted is not None else skip_space(text, cut, end)
    pieces.append((pos, end))
    return pieces
