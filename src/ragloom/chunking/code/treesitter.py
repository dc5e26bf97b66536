"""Tree-sitter parse trees -> chunker Nodes, for every language in `grammars.GRAMMARS`."""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from functools import cache
from typing import Any

from ragloom.chunking.code.grammars import GRAMMARS, TYPE_KINDS, Grammar, TSNode
from ragloom.chunking.code.tree import ByteOffsets, Node


class GrammarMissing(Exception):
    """tree-sitter or the language's grammar wheel is not installed."""


class SourceError(Exception):
    """The source does not parse; `line` is the first line with an error (1-based)."""

    def __init__(self, line: int) -> None:
        super().__init__(f"syntax error near line {line}")
        self.line = line


_local = threading.local()  # a tree_sitter.Parser is not safe to share between threads


@cache
def _language(name: str) -> Any:
    """The tree_sitter.Language of a grammar, loaded from its installed wheel."""
    grammar = GRAMMARS[name]
    try:
        import tree_sitter

        module = importlib.import_module(grammar.module)
    except ImportError as exc:
        raise GrammarMissing(f"{exc.name} is not installed") from None
    try:
        return tree_sitter.Language(getattr(module, grammar.attribute)())
    except (ValueError, AttributeError, OSError) as exc:  # e.g. a grammar ABI too new
        raise GrammarMissing(f"{grammar.module} cannot be loaded: {exc}") from None


def _parser(name: str) -> Any:
    """This thread's parser for one language."""
    parsers = _local.__dict__.setdefault("parsers", {})
    if name not in parsers:
        import tree_sitter

        parsers[name] = tree_sitter.Parser(_language(name))
    return parsers[name]


def _first_error_line(root: TSNode) -> int:
    """1-based line of the first ERROR or MISSING node."""
    stack = [root]
    while stack:
        node = stack.pop()
        if node.is_error or node.is_missing:
            return int(node.start_point[0]) + 1
        stack.extend(reversed([c for c in node.children if c.has_error or c.is_missing]))
    return int(root.start_point[0]) + 1


def parse_tree_sitter(text: str, language: str) -> Node:
    """The module Node of `text`; raises SourceError when tree-sitter reports an error."""
    offsets = ByteOffsets(text)
    tree = _parser(language).parse(offsets.data)
    if tree.root_node.has_error:
        raise SourceError(_first_error_line(tree.root_node))
    builder = _Builder(GRAMMARS[language], text, offsets)
    root = tree.root_node
    return Node(0, len(text), lambda: builder.members(root.named_children, "module"))


class _Builder:
    """Turns tree-sitter nodes into Nodes for one source text."""

    def __init__(self, grammar: Grammar, text: str, offsets: ByteOffsets) -> None:
        self.grammar = grammar
        self.text = text
        self.char = offsets.char

    def _flatten(self, nodes: list[TSNode]) -> list[TSNode]:
        """Nodes with transparent ones (`#ifdef`, statement lists) replaced by their children."""
        grammar = self.grammar
        out: list[TSNode] = []
        stack = list(reversed(nodes))
        while stack:
            node = stack.pop()
            unnamed = node.type in grammar.unnamed_transparent and (
                node.child_by_field_name("name") is None
            )
            if node.type in grammar.transparent or unnamed:
                stack.extend(reversed(node.named_children))
            else:
                out.append(node)
        return out

    def _declaration(self, node: TSNode, depth: int = 0) -> tuple[TSNode, str, str] | None:
        """(declaration node, kind, name) for a declaration or a wrapper around one."""
        found = self.grammar.resolve(node)
        if found is not None:
            return node, found[0], found[1]
        if node.type in self.grammar.wrappers and depth < 3:
            for child in node.named_children:
                inner = self._declaration(child, depth + 1)
                if inner is not None:
                    return inner
        return None

    def members(self, nodes: list[TSNode], scope: str) -> list[Node]:
        """Nodes for the children of a scope, declarations marked and their prefixes joined."""
        out: list[Node] = []
        prefix: list[bool] = []  # whether out[i] may open the declaration after it
        prefixes = self.grammar.prefixes
        for ts in self._flatten(nodes):
            start, end = self.char(ts.start_byte), self.char(ts.end_byte)
            found = self._declaration(ts)
            if found is None:
                out.append(Node(start, end, self._plain_expander(ts)))
                prefix.append(ts.type in prefixes)
                continue
            inner, kind, name = found
            if kind == "function" and scope in TYPE_KINDS:
                kind = "method"
            while out and prefix[-1] and self._joins(out[-1], start):
                start = out.pop().start
                prefix.pop()
            out.append(Node(start, end, self._body_expander(inner, kind), kind, name))
            prefix.append(False)
        return out

    def _joins(self, before: Node, start: int) -> bool:
        """Whether a comment/attribute sits on its own line(s) right above `start`."""
        gap = self.text[before.end : start]
        if gap.strip() or gap.count("\n") > 1:
            return False
        line_start = self.text.rfind("\n", 0, before.start) + 1
        return not self.text[line_start : before.start].strip()

    def _body_expander(self, node: TSNode, kind: str) -> Callable[[], list[Node]]:
        """Children of a declaration: its body's members (classified) or its own parts."""

        def expand() -> list[Node]:
            body = node.child_by_field_name("body")
            if body is None:
                return self._plain(node.named_children)
            return self.members(body.named_children, kind)

        return expand

    def _plain_expander(self, node: TSNode) -> Callable[[], list[Node]]:
        """Children of a statement or expression; none for dense data (many per line),
        which is cut between lines and tokens instead, far cheaper on huge tables."""

        def expand() -> list[Node]:
            lines = node.end_point[0] - node.start_point[0] + 1
            if node.named_child_count > 2 * lines:
                return []
            return self._plain(node.named_children)

        return expand

    def _plain(self, nodes: list[TSNode]) -> list[Node]:
        """Nodes for statements or sub-expressions: split points only, no declarations."""
        return [
            Node(self.char(n.start_byte), self.char(n.end_byte), self._plain_expander(n))
            for n in self._flatten(nodes)
        ]
