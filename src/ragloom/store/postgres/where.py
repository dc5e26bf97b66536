"""Metadata filters as SQL with exactly the Python predicate's semantics.

Each leaf depends on one field; its value is `metadata[key]`, or for a dotted key that is not
itself a key, the nested walk (see `ragloom.filters._lookup`). So a leaf is decided
by the JSON text of at most two top-level fields. The distinct texts of those fields in the
collection are read from the snapshot (cached per collection version), the leaf's own Python
test runs on each, and the allowed texts go into SQL: the database compares texts, Python
decides what matches. Leaves combine with AND / OR / NOT. A GIN-served containment test is
added in front when it can narrow the scan (it is a superset of the exact test).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from psycopg import sql

from ragloom.filters import AllOf, AnyOf, FilterNode, Leaf, Not, lookup

MISSING = "~"  # stands for an absent field (never the text of a JSON value)
SEPARATOR = "\x1f"  # between fields (escaped inside any JSON text)
CONTAINMENT_LIMIT = 64  # allowed values up to which a containment test is added
CACHE_LIMIT = 512


def fields_of(key: str) -> tuple[str, ...]:
    """The top-level fields a leaf on `key` reads."""
    head = key.split(".", 1)[0]
    return (key,) if head == key else (key, head)


def field_text(fields: tuple[str, ...]) -> sql.Composable:
    """SQL for the leaf's value key: each field's JSON text (or MISSING), joined."""
    parts = [
        sql.SQL("coalesce((metadata -> {})::text, {})").format(
            sql.Literal(name), sql.Literal(MISSING)
        )
        for name in fields
    ]
    if len(parts) == 1:
        return parts[0]
    return sql.SQL("({} || {} || {})").format(parts[0], sql.Literal(SEPARATOR), parts[1])


def _as_metadata(fields: tuple[str, ...], texts: tuple[str, ...]) -> dict[str, Any]:
    return {name: json.loads(text) for name, text in zip(fields, texts) if text != MISSING}


def distinct_values(
    conn: Any, collection: int, changed: int, fields: tuple[str, ...], cache: dict[Any, Any]
) -> list[str]:
    """The distinct value keys (see `field_text`) of the fields in one collection version."""
    key = (collection, changed, fields)
    found = cache.get(key)
    if found is None:
        query = sql.SQL("SELECT DISTINCT {} FROM chunks WHERE collection_id = %s").format(
            field_text(fields)
        )
        found = [r[0] for r in conn.execute(query, (collection,)).fetchall()]
        if len(cache) >= CACHE_LIMIT:
            cache.clear()
        cache[key] = found
    return found


def field_values(
    conn: Any, collection: int, changed: int, key: str, cache: dict[Any, Any]
) -> list[Any]:
    """The distinct values a filter on `key` reads in one collection version."""
    fields = fields_of(key)
    out = []
    for text in distinct_values(conn, collection, changed, fields, cache):
        found, value = lookup(_as_metadata(fields, tuple(text.split(SEPARATOR))), key)
        if found:
            out.append(value)
    return out


def leaf_sql(leaf: Leaf, values: list[str]) -> sql.Composable:
    """The exact SQL condition of one leaf, given its field's distinct value keys."""
    fields = fields_of(leaf.key)
    allowed = [v for v in values if leaf.test(_as_metadata(fields, tuple(v.split(SEPARATOR))))]
    if not allowed:
        return sql.SQL("false")
    if len(allowed) == len(values) and leaf.test({}):
        return sql.SQL("true")  # every stored value and a missing field pass
    exact = sql.SQL("{} = ANY({})").format(field_text(fields), sql.Literal(allowed))
    missing_ok = any(MISSING in v.split(SEPARATOR) for v in allowed)
    if len(fields) == 1 and not missing_ok and len(allowed) <= CONTAINMENT_LIMIT:
        objects = [json.dumps({leaf.key: json.loads(v)}) for v in allowed]
        narrow = sql.SQL("metadata @> ANY({}::jsonb[])").format(sql.Literal(objects))
        return sql.SQL("({} AND {})").format(narrow, exact)
    return exact


def compile_filter(
    node: FilterNode, values_of: Callable[[tuple[str, ...]], list[str]]
) -> sql.Composable:
    """SQL for a filter tree; `values_of(fields)` gives a field set's distinct value keys."""
    if isinstance(node, Leaf):
        return leaf_sql(node, values_of(fields_of(node.key)))
    if isinstance(node, Not):
        return sql.SQL("NOT {}").format(compile_filter(node.part, values_of))
    if isinstance(node, AllOf | AnyOf):
        if not node.parts:
            return sql.SQL("true") if isinstance(node, AllOf) else sql.SQL("false")
        glue = " AND " if isinstance(node, AllOf) else " OR "
        inner = sql.SQL(glue).join(compile_filter(p, values_of) for p in node.parts)
        return sql.SQL("({})").format(inner)
    raise TypeError(f"not a filter node: {node!r}")
