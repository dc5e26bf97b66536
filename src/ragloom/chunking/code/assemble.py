"""Declarations and the code between them -> bounded, exact-offset pieces with symbols; code
without usable syntax -> windows of whole lines; long lines cut at token edges."""

from __future__ import annotations

import re
from typing import NamedTuple

from ragloom.chunking.code.tree import Node
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
            while text[pos].isspace():  # (a cut at a word's end: the next piece starts
                pos += 1  # at the next word, so a word that fits is never cut)
            if pos > cut:
                pieces.append((cut, pos))  # whitespace only
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


_WORD = re.compile(r"\w")
_MAX_DEPTH = 64  # deeper syntax (long operator chains) is cut by lines and tokens instead


class Piece(NamedTuple):
    """A chunk before metadata: its span, kind and qualified symbol (None: module code)."""

    start: int
    end: int
    kind: str
    symbol: str | None


def boundary(text: str, before_end: int, after_start: int) -> int:
    """Where to cut between two siblings: at the start of the line after the first one
    ends, so comments between them go with the second; mid-line when they share a line."""
    newline = text.find("\n", before_end, after_start)
    return after_start if newline < 0 else newline + 1


def split_region(
    text: str, start: int, end: int, children: list[Node], max_chars: int
) -> list[Span]:
    """Trimmed pieces of at most max_chars covering [start, end), cut between children
    (recursively inside a child too big on its own), then between lines and tokens."""
    return _pack(text, _atoms(text, start, end, children, max_chars, 0), max_chars)


def _atoms(
    text: str, start: int, end: int, children: list[Node], max_chars: int, depth: int
) -> list[Span]:
    """Spans tiling [start, end), each at most max_chars once trimmed, for `_pack` to join."""
    whole = trim(text, start, end)
    if whole is None or whole[1] - whole[0] <= max_chars:
        return [(start, end)]
    inside = [c for c in children if c.start >= start and c.end <= end]
    if not inside or depth >= _MAX_DEPTH:
        return split_text(text, start, end, max_chars)
    # The header before the first child and the trailer after the last one stand alone,
    # so a signature is never glued to half of the first statement.
    cuts = [_line_start(text, start, inside[0].start)]
    for before, after in zip(inside, inside[1:]):
        cuts.append(max(cuts[-1], boundary(text, before.end, after.start)))
    cuts.append(inside[-1].end)
    atoms = split_text(text, start, cuts[0], max_chars)
    for child, seg_start, seg_end in zip(inside, cuts, cuts[1:]):
        atoms.extend(_atoms(text, seg_start, seg_end, child.children, max_chars, depth + 1))
    atoms.extend(split_text(text, cuts[-1], end, max_chars))
    return atoms


def _line_start(text: str, floor: int, pos: int) -> int:
    """Start of pos's line when only indentation precedes pos there (not before floor)."""
    line_start = max(floor, text.rfind("\n", floor, pos) + 1)
    return line_start if not text[line_start:pos].strip() else pos


def _pack(text: str, atoms: list[Span], max_chars: int) -> list[Span]:
    """Join consecutive atoms greedily into trimmed pieces of at most max_chars."""
    pieces: list[Span] = []
    current: Span | None = None
    for atom in atoms:
        span = trim(text, *atom)
        if span is None:
            continue
        if current is None:
            current = span
        elif span[1] - current[0] <= max_chars:
            current = (current[0], span[1])
        else:
            pieces.append(current)
            current = span
    if current is not None:
        pieces.append(current)
    return pieces


class Assembler:
    """Walks a module's Nodes and emits one piece per declaration that fits, splitting
    the others at their members or statements; code between declarations forms pieces of
    the enclosing scope (module code at the top)."""

    def __init__(self, text: str, max_chars: int) -> None:
        self.text = text
        self.max_chars = max_chars
        self.pieces: list[Piece] = []

    def module(self, root: Node) -> list[Piece]:
        """All pieces of a module, in document order."""
        self._scope(root, "module", None)
        return self.pieces

    def _declaration(self, node: Node, qualifier: str | None) -> None:
        symbol = f"{qualifier}.{node.name}" if qualifier else str(node.name)
        span = trim(self.text, node.start, node.end)
        if span is None:
            return
        if span[1] - span[0] <= self.max_chars:
            self.pieces.append(Piece(span[0], span[1], str(node.kind), symbol))
        else:
            self._scope(node, str(node.kind), symbol)

    def _scope(self, node: Node, kind: str, symbol: str | None) -> None:
        """Members that are declarations on their own; the code around them as `kind`."""
        gap_start = node.start
        gap: list[Node] = []
        for child in node.children:
            if child.kind is None:
                gap.append(child)
                continue
            self._gap(gap_start, child.start, gap, kind, symbol)
            self._declaration(child, symbol)
            gap_start, gap = child.end, []
        self._gap(gap_start, node.end, gap, kind, symbol)

    def _gap(
        self, start: int, end: int, children: list[Node], kind: str, symbol: str | None
    ) -> None:
        """Code between declarations; punctuation alone (a closing brace) is dropped."""
        span = trim(self.text, start, end)
        if span is None or not _WORD.search(self.text, span[0], span[1]):
            return
        for s, e in split_region(self.text, span[0], span[1], children, self.max_chars):
            self.pieces.append(Piece(s, e, kind, symbol))
