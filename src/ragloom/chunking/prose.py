"""Where prose is cut: trimmed spans, sentence and word boundaries, over-long stretches split
at them, and blank-line-separated paragraphs packed into chunks of bounded size."""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_left, bisect_right
from collections.abc import Sequence

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


# A sentence ends at `.`, `!`, `?` or `…` (plus closing quotes/brackets) followed by whitespace
# and a character that is not a lowercase letter (so "e.g. this" stays whole); CJK full stops
# end a sentence without needing whitespace. Group 1 captures the gap to the next sentence.
# One pattern per leading character: a literal prefix lets `re` skip ahead at C speed,
# which is several times faster than scanning with a character class.
_WESTERN_TAIL = r"[.!?\u2026]*[\"'\u201d\u2019\u00bb)\]]*(?=(\s+)[^\sa-z])"
_EASTERN_TAIL = r"[\u3002\uff01\uff1f]*[\u300d\u300f\u201d\u2019\uff09)]*(?=(\s*)\S)"
_SENTENCE_PATTERNS = tuple(
    (ch, re.compile(re.escape(ch) + tail))
    for chars, tail in ((".!?\u2026", _WESTERN_TAIL), ("\u3002\uff01\uff1f", _EASTERN_TAIL))
    for ch in chars
)
_ASCII_PATTERNS = tuple(pair for pair in _SENTENCE_PATTERNS if pair[0].isascii())
# The last non-space character that is followed by whitespace: a word end.
_LAST_WORD_END = re.compile(r".*\S(?=\s)", re.DOTALL)
# A non-space character preceded by whitespace: a word start.
_WORD_START = re.compile(r"(?<=\s)\S")

_ZWJ = "\u200d"
_MODIFIERS = frozenset(chr(c) for c in range(0x1F3FB, 0x1F400))  # emoji skin tones


def sentence_bounds(text: str, start: int, end: int) -> tuple[list[int], list[int]]:
    """Sentence end offsets and the matching next-sentence start offsets in [start, end)."""
    found: list[tuple[int, int]] = []
    patterns = 0
    for ch, pattern in _ASCII_PATTERNS if text.isascii() else _SENTENCE_PATTERNS:
        if text.find(ch, start, end) >= 0:
            patterns += 1
            found += [(m.end(), m.end(1)) for m in pattern.finditer(text, start, end)]
    if patterns > 1:  # a run like "?!" is found once per character: dedupe and reorder
        found = sorted(set(found))
    return [e for e, _ in found], [s for _, s in found]


class SentenceIndex:
    """Sentence bounds of a whole document, found on first use and shared by all its splits."""

    __slots__ = ("_bounds", "_text")

    def __init__(self, text: str) -> None:
        self._text = text
        self._bounds: tuple[list[int], list[int]] | None = None

    def bounds(self) -> tuple[list[int], list[int]]:
        """(sentence ends, next-sentence starts) over the whole text, sorted."""
        if self._bounds is None:
            self._bounds = sentence_bounds(self._text, 0, len(self._text))
        return self._bounds


def last_word_end(text: str, start: int, limit: int) -> int | None:
    """Largest e in (start, limit] where a word ends (text[e] is whitespace), if any."""
    m = _LAST_WORD_END.match(text, start, limit + 1)
    return m.end() if m else None


def first_word_start(text: str, start: int, end: int) -> int | None:
    """Smallest s in [start, end) where a word starts (text[s - 1] is whitespace), if any."""
    m = _WORD_START.search(text, start, end)
    return m.start() if m else None


def _clings_to_previous(ch: str) -> bool:
    """Whether a character must not begin a piece (combining mark, joiner, emoji modifier)."""
    return ch == _ZWJ or ch in _MODIFIERS or unicodedata.category(ch) in ("Mn", "Mc", "Me")


def safe_hard_cut(text: str, start: int, cut: int) -> int:
    """Move a forced cut left so it does not separate a character from its combining marks."""
    c = cut
    while _clings_to_previous(text[c]) or text[c - 1] == _ZWJ:
        c -= 1
        if c <= start:  # one giant cluster: cutting it is unavoidable
            return cut
    return c


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
