"""Boundary finders: sentence ends, word ends and word starts, located with `re` only."""

from __future__ import annotations

import re
import unicodedata

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
