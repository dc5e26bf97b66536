"""The syntax tree the code chunker works on: spans, declarations and inner boundaries."""

from __future__ import annotations

from collections.abc import Callable


class Node:
    """A stretch of source (character offsets): a declaration when `kind` is set.

    A declaration's `start` already includes its decorators/attributes and the comment block
    right before it. `children` are the node's inner pieces (members, statements, sub-
    expressions) in order, built on first use: most nodes fit a chunk and are never opened.
    """

    __slots__ = ("start", "end", "kind", "name", "_expand", "_children")

    def __init__(
        self,
        start: int,
        end: int,
        expand: Callable[[], list[Node]] | None = None,
        kind: str | None = None,
        name: str | None = None,
    ) -> None:
        self.start = start
        self.end = end
        self.kind = kind
        self.name = name
        self._expand = expand
        self._children: list[Node] | None = None

    @property
    def children(self) -> list[Node]:
        """Inner pieces in document order (empty for a leaf)."""
        if self._children is None:
            self._children = self._expand() if self._expand is not None else []
            self._expand = None
        return self._children

    def __repr__(self) -> str:
        label = f"{self.kind} {self.name} " if self.kind else ""
        return f"Node({label}{self.start}:{self.end})"
