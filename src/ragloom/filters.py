"""Metadata filters: a JSON-friendly language compiled once into a predicate.

    {"book_id": "romans", "chapter_num": {"$gte": 9}, "tags": {"$overlap": ["SwiftData"]},
     "min_os": {"$version_lte": "18.0"}, "$not": {"deprecated": True}}

A bare value means equality (on a list field: the list contains it). Operators: $eq $ne $in
$nin $gt $gte $lt $lte $exists $overlap, $version_{eq,gt,gte,lt,lte} for dotted versions
("9.0" < "18.0"), and $and / $or / $not to combine. Keys may use dots for nested fields.
Malformed filters raise `InputError` when compiled; a chunk whose value has another type
than the operand simply does not match, but a comparison ($gt, $gte, $lt, $lte) with a kind
(number or string) the field never holds in the collection is `FilterTypeMismatch`
(`mistyped` decides it from the field's values).
"""

from __future__ import annotations

import json
import operator
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ragloom.errors import InputError

Predicate = Callable[[Mapping[str, Any]], bool]

_MISSING = object()
_VERSION = re.compile(r"^\d+(\.\d+)*$")
COMPARISONS = ("$gt", "$gte", "$lt", "$lte")
VERSION_OPS = ("$version_eq", "$version_gt", "$version_gte", "$version_lt", "$version_lte")
FIELD_OPS = ("$eq", "$ne", "$in", "$nin", *COMPARISONS, "$exists", "$overlap", *VERSION_OPS)
LOGICAL_OPS = ("$and", "$or", "$not")


def version_key(value: Any) -> tuple[int, ...] | None:
    """Turn "18.0.1" into (18, 0, 1), trailing zeros dropped; None if not a dotted version."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value + 0)  # -0.0 + 0 is 0.0: a zero has no sign (nor in PostgreSQL's JSON)
    if not isinstance(value, str) or not _VERSION.match(value.strip()):
        return None
    parts = [int(p) for p in value.strip().split(".")]
    while len(parts) > 1 and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


def _lookup(metadata: Mapping[str, Any], key: str) -> Any:
    if key in metadata:
        return metadata[key]
    value: Any = metadata
    for part in key.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return _MISSING
        value = value[part]
    return value


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def _equal(actual: Any, expected: Any) -> bool:
    if isinstance(actual, list) and not isinstance(expected, list):
        return any(_equal(item, expected) for item in actual)
    if isinstance(actual, bool) or isinstance(expected, bool):
        return type(actual) is type(expected) and actual == expected
    return actual == expected


_ORDERINGS = {"$gt": operator.gt, "$gte": operator.ge, "$lt": operator.lt, "$lte": operator.le}


def _ordered(actual: Any, expected: Any, op: str) -> bool:
    numeric = (int, float)
    if isinstance(actual, bool) or not (
        (isinstance(actual, numeric) and isinstance(expected, numeric))
        or (isinstance(actual, str) and isinstance(expected, str))
    ):
        return False
    return bool(_ORDERINGS[op](actual, expected))


def _kind(value: Any) -> str | None:
    """ "number" or "string" for values the ordering operators compare, else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return "number"
    return "string" if isinstance(value, str) else None


def mistyped(leaf: Leaf, values: Iterable[Any]) -> str | None:
    """Why a comparison leaf can match nothing: the field's `values` (its distinct values in
    a collection) hold comparable ones, and none of the operand's kind. None when it can match
    (or when the leaf is no comparison, or the field holds nothing comparable)."""
    wanted = _kind(leaf.operand) if leaf.op in COMPARISONS else None
    if wanted is None:
        return None
    kinds = {_kind(v) for v in values} - {None}
    if not kinds or wanted in kinds:
        return None
    (held,) = kinds
    example = next(v for v in values if _kind(v) == held)
    return (
        f"filter on {leaf.key!r}: {leaf.op} compares with the {wanted} {leaf.operand!r}, "
        f"but {leaf.key!r} holds {held}s (e.g. {example!r})"
    )


def _field_predicate(key: str, op: str, operand: Any) -> Predicate:
    """One operator applied to one field."""
    where = f"filter on {key!r}: {op}"
    if op in ("$eq", "$ne"):
        if not _scalar(operand) and not isinstance(operand, list):
            raise InputError(f"{where} needs a value, got {type(operand).__name__}")
        if op == "$eq":
            return lambda m: _equal(_lookup(m, key), operand)
        return lambda m: not _equal(_lookup(m, key), operand)
    if op in ("$in", "$nin", "$overlap"):
        if not isinstance(operand, list) or not all(_scalar(v) for v in operand):
            raise InputError(f"{where} needs a list of values, got {operand!r}")
        if op == "$in":
            return lambda m: any(_equal(_lookup(m, key), v) for v in operand)
        if op == "$nin":
            return lambda m: not any(_equal(_lookup(m, key), v) for v in operand)

        def overlap(m: Mapping[str, Any]) -> bool:
            actual = _lookup(m, key)
            items = actual if isinstance(actual, list) else [actual]
            return any(_equal(item, v) for item in items for v in operand)

        return overlap
    if op in COMPARISONS:
        if isinstance(operand, bool) or not isinstance(operand, (int, float, str)):
            raise InputError(f"{where} needs a number or a string, got {operand!r}")
        return lambda m: _ordered(_lookup(m, key), operand, op)
    if op == "$exists":
        if not isinstance(operand, bool):
            raise InputError(f"{where} needs true or false, got {operand!r}")
        return lambda m: (_lookup(m, key) is not _MISSING) is operand
    if op in VERSION_OPS:
        wanted = version_key(operand)
        if wanted is None:
            raise InputError(f'{where} needs a dotted version such as "18.0", got {operand!r}')
        compare = op.removeprefix("$version_")

        def version(m: Mapping[str, Any]) -> bool:
            actual = version_key(_lookup(m, key))
            if actual is None:
                return False
            return {
                "eq": actual == wanted,
                "gt": actual > wanted,
                "gte": actual >= wanted,
                "lt": actual < wanted,
                "lte": actual <= wanted,
            }[compare]

        return version
    raise InputError(
        f"unknown filter operator {op!r} on {key!r}", f"use one of: {', '.join(FIELD_OPS)}"
    )


@dataclass(frozen=True)
class Leaf:
    """One operator on one field; `test(metadata)` applies it to a chunk's metadata."""

    key: str
    op: str
    operand: Any
    test: Predicate = field(compare=False, repr=False)


@dataclass(frozen=True)
class AllOf:
    parts: tuple[FilterNode, ...]


@dataclass(frozen=True)
class AnyOf:
    parts: tuple[FilterNode, ...]


@dataclass(frozen=True)
class Not:
    part: FilterNode


FilterNode = Leaf | AllOf | AnyOf | Not
MATCH_ALL = AllOf(())


def _conjunction(parts: list[FilterNode]) -> FilterNode:
    return parts[0] if len(parts) == 1 else AllOf(tuple(parts))


def parse_filter(spec: Any) -> FilterNode:
    """Parse a filter spec into a tree of leaves joined by and/or/not; errors are `InputError`.

    The tree is what each store evaluates its own way: a predicate over a metadata dict,
    vectorized over metadata columns, or SQL."""
    if not isinstance(spec, Mapping):
        raise InputError(f"a filter must be a JSON object, got {type(spec).__name__}")
    parts: list[FilterNode] = []
    for key, value in spec.items():
        if not isinstance(key, str):
            raise InputError(f"filter keys must be strings, got {key!r}")
        if key in ("$and", "$or"):
            if not isinstance(value, list) or not value:
                raise InputError(f"{key} needs a non-empty list of filters")
            children = tuple(parse_filter(v) for v in value)
            parts.append(AllOf(children) if key == "$and" else AnyOf(children))
        elif key == "$not":
            parts.append(Not(parse_filter(value)))
        elif key.startswith("$"):
            raise InputError(
                f"unknown filter operator {key!r}", f"combine filters with {', '.join(LOGICAL_OPS)}"
            )
        elif isinstance(value, Mapping):
            if not value:
                raise InputError(f"filter on {key!r} is an empty object")
            if not all(isinstance(op, str) and op.startswith("$") for op in value):
                raise InputError(
                    f"filter on {key!r} mixes operators and fields",
                    "nested fields are written with dots, e.g. {'a.b': 1}",
                )
            leaves: list[FilterNode] = [
                Leaf(key, op, v, _field_predicate(key, op, v)) for op, v in value.items()
            ]
            parts.append(_conjunction(leaves))
        else:
            parts.append(Leaf(key, "$eq", value, _field_predicate(key, "$eq", value)))
    if not parts:
        return MATCH_ALL
    return _conjunction(parts)


def predicate_of(node: FilterNode) -> Predicate:
    """`predicate(metadata) -> bool` for a parsed filter."""
    if isinstance(node, Leaf):
        return node.test
    if isinstance(node, Not):
        inner = predicate_of(node.part)
        return lambda m: not inner(m)
    tests = [predicate_of(p) for p in node.parts]
    if isinstance(node, AnyOf):
        return lambda m: any(t(m) for t in tests)
    if len(tests) == 1:
        return tests[0]
    return lambda m: all(t(m) for t in tests)


def leaves(node: FilterNode) -> list[Leaf]:
    """Every leaf of a filter tree, in order."""
    if isinstance(node, Leaf):
        return [node]
    if isinstance(node, Not):
        return leaves(node.part)
    return [leaf for part in node.parts for leaf in leaves(part)]


def lookup(metadata: Mapping[str, Any], key: str) -> tuple[bool, Any]:
    """(found, value) of a (possibly dotted) key in a metadata dict, as filters read it."""
    value = _lookup(metadata, key)
    return (False, None) if value is _MISSING else (True, value)


def compile_filter(spec: Any) -> Predicate:
    """Compile a filter spec into `predicate(metadata) -> bool`; errors are `InputError`."""
    return predicate_of(parse_filter(spec))


def filter_key(spec: Any) -> str:
    """A canonical string for a filter spec (to cache its result)."""
    return json.dumps(spec, sort_keys=True, default=str)
