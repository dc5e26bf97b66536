"""Citations checked as the answer streams: `[n]` markers (`[1]`, `[1, 3]`, `[2][4]`) that
name a passage given are kept and mapped to it; a number that names no passage given is
reported and taken out of the text, before any client sees it.

The check runs on the pieces as they arrive: only text that may still become a marker (a
`[` and digits, a few characters) and the spaces before it are held back, so the answer
still streams; a marker taken out takes the spaces before it along ("blue [9]." ->
"blue.").
"""

from __future__ import annotations

import re
from collections.abc import Callable

MARKER = re.compile(r"\[(\d{1,4}(?:\s*,\s*\d{1,4})*)\]")
PARTIAL = re.compile(r"\[(?:\d{1,4}(?:\s*,\s*\d{1,4})*\s*,?\s*)?")  # a marker's beginning
MAX_PARTIAL = 40
_SPACES = " \t"
# How a model says the passages do not cover the question (the grounding instruction asks
# it to say so plainly).
NOT_COVERED = re.compile(
    r"\b(?:(?:do|does|did)\s*n[o']t|cannot|can't|not)\s+(?:seem\s+to\s+)?"
    r"(?:cover|contain|address|mention|say|include|answer|provide|find|found|covered|"
    r"mentioned|addressed)\b|\bno (?:information|mention|passage)\b",
    re.IGNORECASE,
)


class CitationCheck:
    """Feed the answer's pieces in order; each call returns the text to pass on.

    `valid(n)` tells whether passage `n` was given (tool rounds add passages as they go).
    `cited` lists the valid numbers in the order first cited, `invalid` the others.
    """

    def __init__(self, valid: Callable[[int], bool]) -> None:
        self.valid = valid
        self.cited: list[int] = []
        self.invalid: list[int] = []
        self._held = ""

    def feed(self, piece: str) -> str:
        text, self._held = self._held + piece, ""
        out: list[str] = []
        at = 0
        while at < len(text):
            start = text.find("[", at)
            if start < 0:
                out.append(text[at:])
                break
            out.append(text[at:start])
            marker = MARKER.match(text, start)
            if marker:
                kept = self._marker(marker.group(1))
                if not kept:
                    out = ["".join(out).rstrip(_SPACES)]
                out.append(kept)
                at = marker.end()
            elif len(text) - start <= MAX_PARTIAL and PARTIAL.fullmatch(text, start):
                self._held = text[start:]
                break
            else:
                out.append("[")
                at = start + 1
        emitted = "".join(out)
        kept = emitted.rstrip(_SPACES)
        self._held = emitted[len(kept) :] + self._held
        return kept

    def flush(self) -> str:
        """What is still held back, at the end of the answer."""
        held, self._held = self._held, ""
        return held

    def _marker(self, numbers: str) -> str:
        valid = []
        for n in (int(part) for part in numbers.split(",")):
            if self.valid(n):
                valid.append(n)
                if n not in self.cited:
                    self.cited.append(n)
            elif n not in self.invalid:
                self.invalid.append(n)
        return "[" + ", ".join(str(n) for n in valid) + "]" if valid else ""


def check(answer: str, valid: Callable[[int], bool]) -> tuple[str, CitationCheck]:
    """A whole answer checked at once: (the text kept, the check with cited and invalid)."""
    checking = CitationCheck(valid)
    return checking.feed(answer) + checking.flush(), checking


def says_not_covered(answer: str, cited: list[int]) -> bool:
    """The model said the passages do not cover the question (and cited none of them)."""
    return not cited and bool(NOT_COVERED.search(answer))
