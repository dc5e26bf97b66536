"""The rows of an embedded index that can still be read from its pages: each table's
b-tree is walked from its root (sqlite_master on page 1 names them); leaves the walk cannot
reach (a damaged page above them, or page 1 itself damaged) are found by scanning every page
and told apart by the shape of their rows, which differs in every table of ragloom's schema.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragloom.operations.salvage.pages import (
    INTERIOR_INDEX,
    INTERIOR_TABLE,
    LEAF_INDEX,
    LEAF_TABLE,
    PageError,
    PageFile,
    children,
    freelist,
    index_cells,
    leaf_cells,
    open_pages,
    page_kind,
)


def _text(v: Any) -> bool:
    return isinstance(v, str)


def _int(v: Any) -> bool:
    return isinstance(v, int)


def _maybe(test: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda v: v is None or test(v)


def _number(v: Any) -> bool:
    return isinstance(v, (int, float))


def _blob(v: Any) -> bool:
    return isinstance(v, bytes)


def _null(v: Any) -> bool:
    return v is None


# Each table of schema 2 by the shape of its records (INTEGER PRIMARY KEY columns are NULL:
# the rowid stands for them).
SHAPES: dict[str, tuple[Callable[[Any], bool], ...]] = {
    "collections": (_null, _text, _text, _int, _int, _int),
    "documents": (
        *(_null, _int, _text, _maybe(_text), _maybe(_text), _text, _text, _int),
        *(_maybe(_text), _number),
    ),
    "chunks": (_null, _int, _int, _int, _int, _int, _text, _maybe(_text), _blob),
    "vectors": (_null, _int, _int, _blob),
    "segments": (_text, _int, _int, _int, _int, _int, _int, _maybe(_int), _maybe(_number)),
    "meta": (_text, _text),
    "removed": (_null, _int, _int),
}


def _document_key(values: list) -> bool:
    return len(values) == 3 and _int(values[0]) and _text(values[1]) and _int(values[2])


def shape_of(values: list) -> str | None:
    for table, tests in SHAPES.items():
        if len(values) == len(tests) and all(t(v) for t, v in zip(tests, values)):
            return table
    return None


@dataclass
class Recovered:
    """Rows by table and rowid, and what the pages told about the damage."""

    pages: int
    page_size: int
    header_ok: bool
    rows: dict[str, dict[int, list]] = field(default_factory=dict)
    unreadable: list[int] = field(default_factory=list)  # pages that parse as nothing
    lost_in: dict[str, int] = field(default_factory=dict)  # table -> its damaged pages found
    found_by_scan: int = 0  # rows found only by scanning (the tree above them is damaged)
    cell_pages: dict[tuple[str, int], tuple[int, ...]] = field(default_factory=dict)
    # document row -> (collection id, document id), from the documents' unique index: a
    # separate b-tree, so it names documents whose own rows were lost
    names: dict[int, tuple[int, str]] = field(default_factory=dict)


def recover(path: Path) -> Recovered:
    """Every ragloom row of the file at `path` (and its WAL) that still parses."""
    pages = open_pages(path)
    found = Recovered(pages.count, pages.page_size, pages.header_ok)
    found.rows = {table: {} for table in SHAPES}
    free = freelist(pages)
    used: set[int] = set(free)
    damaged: set[int] = set()
    for table, root in _roots(pages).items():
        if table in SHAPES:
            _walk(pages, table, root, found, used, damaged)
    for number in range(1, pages.count + 1):
        if number in used:
            continue
        try:
            kind = page_kind(pages, number)[0]
            cells = list(leaf_cells(pages, number)) if kind == LEAF_TABLE else []
            keys = list(index_cells(pages, number)) if kind in (LEAF_INDEX, INTERIOR_INDEX) else []
        except PageError:
            damaged.add(number)
            continue
        for key in keys:
            used.update(key.pages)
            if _document_key(key.values):  # UNIQUE (collection_id, doc_id) -> rowid
                found.names.setdefault(key.values[2], (key.values[0], key.values[1]))
        if kind != LEAF_TABLE:
            continue
        used.add(number)
        for cell in cells:
            shape = shape_of(cell.values)
            if shape is not None and cell.rowid not in found.rows[shape]:
                found.rows[shape][cell.rowid] = cell.values
                found.cell_pages[(shape, cell.rowid)] = cell.pages
                found.found_by_scan += 1
            used.update(cell.pages)
    found.unreadable = sorted(damaged - used)
    return found


def _roots(pages: PageFile) -> dict[str, int]:
    """Root page of each table, from sqlite_master (empty when page 1 is damaged)."""
    if not pages.header_ok:
        return {}
    roots: dict[str, int] = {}
    stack = [1]
    seen: set[int] = set()
    while stack:
        number = stack.pop()
        if number in seen:
            continue
        seen.add(number)
        try:
            kind = page_kind(pages, number)[0]
            if kind == INTERIOR_TABLE:
                stack.extend(children(pages, number))
                continue
            for cell in leaf_cells(pages, number):
                kind_, name, _, root, _ = cell.values
                if kind_ == "table" and isinstance(root, int):
                    roots[name] = root
        except (PageError, ValueError):
            continue
    return roots


def _walk(
    pages: PageFile, table: str, root: int, found: Recovered, used: set[int], damaged: set[int]
) -> None:
    """Rows of one table's b-tree; a page that does not parse is counted against it."""
    stack = [root]
    while stack:
        number = stack.pop()
        if number in used or not 1 <= number <= pages.count:
            continue
        try:
            kind = page_kind(pages, number)[0]
            if kind == INTERIOR_TABLE:
                stack.extend(children(pages, number))
                used.add(number)
                continue
            if kind != LEAF_TABLE:
                raise PageError(f"page {number} is not part of a table")
            cells = list(leaf_cells(pages, number))
        except PageError:
            damaged.add(number)
            found.lost_in[table] = found.lost_in.get(table, 0) + 1
            continue
        used.add(number)
        for cell in cells:
            used.update(cell.pages)
            if shape_of(cell.values) == table:
                found.rows[table][cell.rowid] = cell.values
                found.cell_pages[(table, cell.rowid)] = cell.pages
