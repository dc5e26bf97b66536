"""Python source -> chunker Nodes, with the standard `ast` module."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

from ragloom.chunking.code.tree import ByteOffsets, Node

_BYTE_LINE_BREAK = re.compile(rb"\r\n|\r|\n")
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def parse_python(text: str) -> Node:
    """The module Node of `text`; raises SyntaxError (or ValueError) when it does not parse."""
    tree = ast.parse(text)
    builder = _Builder(text)
    return Node(0, len(text), lambda: builder.statements(tree.body, "module"))


class _Builder:
    """Turns ast nodes into Nodes for one source text."""

    def __init__(self, text: str) -> None:
        self.text = text
        offsets = ByteOffsets(text)
        self.char = offsets.char
        self.line_bytes = [0] + [m.end() for m in _BYTE_LINE_BREAK.finditer(offsets.data)]

    def _offset(self, line: int, column: int) -> int:
        """Character offset of an ast position (1-based line, UTF-8 byte column)."""
        return self.char(self.line_bytes[line - 1] + column)

    def _span(self, node: ast.AST) -> tuple[int, int]:
        start = self._offset(node.lineno, node.col_offset)  # type: ignore[attr-defined]
        end = self._offset(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]
        return start, end

    def statements(self, body: list[ast.stmt], scope: str) -> list[Node]:
        """Nodes for a block's statements: definitions marked, with decorators and comments."""
        out: list[Node] = []
        for stmt in body:
            start, end = self._span(stmt)
            if not isinstance(stmt, _DEFINITIONS):
                out.append(Node(start, end, self._expander(stmt)))
                continue
            if stmt.decorator_list:
                first = min(d.lineno for d in stmt.decorator_list)
                start = self._line_text_start(first)
            floor = out[-1].end if out else 0
            start = self._comments_above(start, floor)
            if isinstance(stmt, ast.ClassDef):
                kind, inner = "class", "class"
            else:
                kind = "method" if scope == "class" else "function"
                inner = "function"
            expand = self._block_expander(stmt.body, inner)
            out.append(Node(start, end, expand, kind, stmt.name))
        return out

    def _line_text_start(self, line: int) -> int:
        """Offset of the first non-blank character of a 1-based line."""
        start = self._offset(line, 0)
        text = self.text
        while start < len(text) and text[start] in " \t\f":
            start += 1
        return start

    def _comments_above(self, start: int, floor: int) -> int:
        """Extend `start` over the `#` comment lines directly above it (no blank line)."""
        text = self.text
        line_start = text.rfind("\n", 0, start) + 1
        while line_start > 0:
            prev_start = text.rfind("\n", 0, line_start - 1) + 1
            line = text[prev_start:line_start]
            if prev_start < floor or not line.strip().startswith("#"):
                break
            start = prev_start + len(line) - len(line.lstrip())
            line_start = prev_start
        return start

    def _block_expander(self, body: list[ast.stmt], scope: str) -> Callable[[], list[Node]]:
        return lambda: self.statements(body, scope)

    def _expander(self, node: ast.AST) -> Callable[[], list[Node]]:
        return lambda: self._inner(node)

    def _inner(self, node: ast.AST) -> list[Node]:
        """The statements nested in a compound statement (if, for, try, with, match...).

        Expressions are not opened: an oversized simple statement (a long literal) is cut
        between lines and tokens, which is as good and far cheaper on huge data tables.
        """
        found: list[ast.AST] = []
        for name in ("body", "handlers", "orelse", "finalbody", "cases"):
            for child in getattr(node, name, None) or ():
                if isinstance(child, ast.match_case):  # no position of its own
                    found.extend(child.body)
                elif isinstance(child, (ast.stmt, ast.excepthandler)):
                    found.append(child)
        nodes = [Node(*self._span(c), self._expander(c)) for c in found]
        nodes.sort(key=lambda n: (n.start, -n.end))
        return nodes
