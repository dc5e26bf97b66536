"""Offset conversions for parsers that count UTF-8 bytes, and 1-based line numbers."""

from __future__ import annotations

import re
from bisect import bisect_right

import numpy as np

# Line breaks as Python's tokenizer and most editors count them.
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


class ByteOffsets:
    """Map UTF-8 byte offsets of a text (as parsers report them) to character offsets."""

    __slots__ = ("data", "_char_starts")

    def __init__(self, text: str) -> None:
        self.data = text.encode("utf-8", "surrogatepass")
        self._char_starts: np.ndarray | None = None
        if len(self.data) != len(text):
            codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
            widths = 1 + (codes >= 0x80) + (codes >= 0x800) + (codes >= 0x10000)
            starts = np.zeros(len(codes) + 1, dtype=np.int64)
            np.cumsum(widths, out=starts[1:])
            self._char_starts = starts  # byte offset where each character starts

    def char(self, byte: int) -> int:
        """Character offset of a byte offset (one inside a character maps to its start)."""
        if self._char_starts is None:
            return byte
        return int(np.searchsorted(self._char_starts, byte, side="right")) - 1


class LineIndex:
    """1-based line numbers of character offsets, and character offsets of line starts."""

    __slots__ = ("starts",)

    def __init__(self, text: str) -> None:
        self.starts = [0] + [m.end() for m in _LINE_BREAK.finditer(text)]

    def line(self, offset: int) -> int:
        """The 1-based line holding character `offset`."""
        return bisect_right(self.starts, offset)

    def start(self, line: int) -> int:
        """Character offset where 1-based `line` starts."""
        return self.starts[line - 1]
