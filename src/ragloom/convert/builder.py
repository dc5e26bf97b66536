"""What a converter gives back (`Converted`) and the builder every converter writes through.

The builder appends blocks of text separated by blank lines and records, as it goes, where
each unit (page, slide, cell) and each section heading begins: offsets into the final text,
so chunks cut from it can say which page and section they come from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ragloom.types import Structure

_SPACES = re.compile(r"[ \t\f\v\u00a0]+")
_BLANK_LINES = re.compile(r"\n\s*\n+")


@dataclass(frozen=True)
class Converted:
    """One file as text plus structure: nothing else (chunking works on it as on text)."""

    text: str
    title: str | None = None
    structure: Structure = field(default_factory=Structure)
    metadata: dict[str, Any] = field(default_factory=dict)


def tidy(text: str) -> str:
    """Runs of spaces as one, trailing spaces dropped, at most one blank line in a row."""
    lines = (_SPACES.sub(" ", line).strip() for line in text.replace("\r", "\n").split("\n"))
    return _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip()


class TextBuilder:
    """Blocks of text in order, with the offsets where units and headings begin."""

    def __init__(self, unit: str = "page", language: str | None = None) -> None:
        self.unit_name = unit
        self.language = language
        self._pieces: list[str] = []
        self._length = 0
        self._starts: list[int] = []
        self._kinds: list[str] = []
        self._numbers: list[int] = []
        self._headings: list[tuple[int, int, str]] = []

    @property
    def offset(self) -> int:
        """Where the next block will begin."""
        return self._length + (2 if self._length else 0)

    def _append(self, text: str) -> int:
        if self._length:
            self._pieces.append("\n\n")
            self._length += 2
        start = self._length
        self._pieces.append(text)
        self._length += len(text)
        return start

    def start_unit(self, kind: str = "", number: int | None = None) -> None:
        """The next block begins a new page, slide or cell (an empty unit still counts);
        `number` when it is not the next (a cell's output goes on under its cell)."""
        self._starts.append(self.offset)
        self._kinds.append(kind)
        self._numbers.append(number if number is not None else len(self._starts))

    def heading(self, title: str, level: int = 1) -> None:
        """A section heading: its title becomes a line of the text and opens a section."""
        title = " ".join(title.split())
        if title:
            self._headings.append((self._append(title), max(1, level), title))

    def section(self, title: str, level: int = 1) -> None:
        """A section that begins at the next block without writing its title (a bookmark
        that points into text already there)."""
        title = " ".join(title.split())
        if title:
            self._headings.append((self.offset, max(1, level), title))

    def section_at(self, offset: int, title: str, level: int = 1) -> None:
        """A section that begins at `offset` of the text written so far (a bookmark whose
        title is already part of the text)."""
        title = " ".join(title.split())
        if title:
            self._headings.append((min(offset, self._length), max(1, level), title))

    def text_since(self, offset: int) -> str:
        """The text written from `offset` on (for finding where something was written)."""
        text = "".join(self._pieces)
        self._pieces = [text]
        return text[offset:]

    def block(self, text: str, clean: bool = True) -> None:
        """A paragraph, a table row or a code cell (code keeps its spacing: `clean=False`)."""
        text = tidy(text) if clean else text.strip("\n").rstrip()
        if text.strip():
            self._append(text)

    def build(self, title: str | None = None, metadata: dict[str, Any] | None = None) -> Converted:
        text = "".join(self._pieces)
        kinds = tuple(self._kinds) if any(self._kinds) else ()
        structure = Structure(
            self.unit_name,
            tuple(min(s, len(text)) for s in self._starts),
            kinds,
            tuple(sorted(self._headings, key=lambda h: h[0])),
            self.language,
            () if self._numbers == list(range(1, len(self._numbers) + 1)) else tuple(self._numbers),
        )
        title = " ".join(title.split()) if title else None
        return Converted(text, title or None, structure, dict(metadata or {}))
