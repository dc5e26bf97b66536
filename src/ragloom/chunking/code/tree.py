"""The syntax tree the code chunker works on (spans, declarations and inner boundaries), and
the offsets it is built from: UTF-8 byte offsets as parsers report them, 1-based lines."""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field

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


@dataclass(slots=True, eq=False)
class Node:
    """A stretch of source (character offsets): a declaration when `kind` is set.

    A declaration's `start` already includes its decorators/attributes and the comment block
    right before it. `children` are the node's inner pieces (members, statements, sub-
    expressions) in order, built by `expand` on first use: most nodes fit a chunk and are
    never opened.
    """

    start: int
    end: int
    expand: Callable[[], list[Node]] | None = None
    kind: str | None = None
    name: str | None = None
    _children: list[Node] | None = field(default=None, init=False, repr=False)

    @property
    def children(self) -> list[Node]:
        """Inner pieces in document order (empty for a leaf)."""
        if self._children is None:
            self._children = self.expand() if self.expand is not None else []
            self.expand = None
        return self._children

    def __repr__(self) -> str:
        label = f"{self.kind} {self.name} " if self.kind else ""
        return f"Node({label}{self.start}:{self.end})"
