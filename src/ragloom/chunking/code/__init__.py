"""Code chunking: declarations (functions, types, methods) as chunks, with symbols and lines.

Python is parsed with the standard `ast` module, Swift, JavaScript, TypeScript, Go, Rust,
Java, C and C++ with tree-sitter grammars from PyPI (the `code` extra). Code that cannot be
parsed (unknown language, syntax error, grammar not installed) is cut into windows of whole
lines with overlap; a file that should have parsed but did not raises a CodeParseWarning.
"""

from __future__ import annotations

import warnings
from typing import Any

from ragloom.chunking.code.assemble import Assembler, Piece, line_windows
from ragloom.chunking.code.languages import (
    CODE_SUFFIXES,
    LANGUAGES,
    language_for,
    language_named,
)
from ragloom.chunking.code.tree import LineIndex, Node
from ragloom.chunking.prose import trim
from ragloom.types import ChunkSpan

__all__ = [
    "CODE_SUFFIXES",
    "LANGUAGES",
    "CodeParseWarning",
    "chunk_code",
    "language_for",
    "language_named",
]


class CodeParseWarning(UserWarning):
    """A source file could not be parsed; it was chunked by lines instead."""


def _parse(text: str, language: str, source: str | None) -> tuple[Node | None, str]:
    """The module Node and the language it parsed as; (None, language) means: use lines."""
    from ragloom.chunking.code.grammars import GRAMMARS

    where = source or "source"
    if language == "python":
        from ragloom.chunking.code.python import parse_python

        try:
            return parse_python(text), language
        except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
            line = getattr(exc, "lineno", None)
            at = f" near line {line}" if line else ""
            _warn(f"{where}: Python does not parse{at} ({type(exc).__name__}); chunked by lines")
            return None, language
    if language not in GRAMMARS:
        return None, language
    from ragloom.chunking.code.treesitter import GrammarMissing, SourceError, parse_tree_sitter

    try:
        return parse_tree_sitter(text, language), language
    except GrammarMissing as exc:
        _warn(f"{where}: no {language} grammar ({exc}; install ragloom[code]); chunked by lines")
        return None, language
    except SourceError as exc:
        if language == "c":  # a .h file may well be C++
            try:
                return parse_tree_sitter(text, "cpp"), "cpp"
            except (GrammarMissing, SourceError):
                pass
        _warn(f"{where}: {language} does not parse ({exc}); chunked by lines")
        return None, language


def _warn(message: str) -> None:
    warnings.warn(message, CodeParseWarning, stacklevel=4)


def chunk_code(
    text: str,
    language: str | None,
    max_chars: int,
    overlap: int,
    source: str | None = None,
) -> list[ChunkSpan]:
    """Cut source code into declaration chunks (or line windows) with exact offsets.

    Metadata: `language` (when known), `kind` (function, method, class, struct, ...,
    "module" for code between declarations, "lines" for line windows), `symbol` (qualified,
    e.g. `Outer.Inner.method`; absent for module code and line windows), and the 1-based
    `start_line` / `end_line`. max_chars 0 keeps the whole file as one module chunk.
    """
    whole = trim(text, 0, len(text))
    if whole is None:
        return []
    if max_chars == 0:
        pieces = [Piece(whole[0], whole[1], "module", None)]
    else:
        root, language = _parse(text, language, source) if language else (None, language)
        if root is None:
            windows = line_windows(text, max_chars, overlap)
            pieces = [Piece(start, end, "lines", None) for start, end in windows]
        else:
            pieces = Assembler(text, max_chars).module(root)
    lines = LineIndex(text)
    return [
        ChunkSpan(text[p.start : p.end], p.start, p.end, _metadata(p, language, lines))
        for p in pieces
    ]


def _metadata(piece: Piece, language: str | None, lines: LineIndex) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    if language:
        meta["language"] = language
    meta["kind"] = piece.kind
    if piece.symbol:
        meta["symbol"] = piece.symbol
    meta["start_line"] = lines.line(piece.start)
    meta["end_line"] = lines.line(piece.end - 1)
    return meta
