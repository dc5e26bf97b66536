"""JSON Schema of the options (`ragloom.contract.options`), for the OpenAI and MCP tools'
input schemas, the one check of a tool call's arguments against them, and of a query."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from ragloom.contract.options import ARGUMENTS, MAX_QUERY_CHARS, Option
from ragloom.errors import InputError, InvalidRequest

_TYPES: dict[str, type | tuple[type, ...]] = {
    "string": str,
    "integer": int,
    "number": (int, float),
    "boolean": bool,
    "object": Mapping,  # a library caller may pass any mapping, JSON gives a dict
    "array": (list, tuple),
}


def property_schema(option: Option, surface: str) -> dict[str, Any]:
    """One option as a JSON Schema property, with its bounds and description."""
    schema: dict[str, Any] = {"type": option.kind, "description": option.description}
    if option.choices is not None:
        schema["enum"] = list(option.choices)
    if option.minimum is not None:
        schema["minimum"] = option.minimum
    maximum = option.maximum_on(surface)
    if maximum is not None:
        schema["maximum"] = maximum
    if option.items is not None:
        schema["items"] = {"type": option.items}
        if option.item_min_length is not None:
            schema["items"]["minLength"] = option.item_min_length
        if option.item_max_length is not None:
            schema["items"]["maxLength"] = option.item_max_length
    for bound, keyword in (("min_length", "min"), ("max_length", "max")):
        value = getattr(option, bound)
        if value is not None:
            schema[keyword + _LENGTH[option.kind]] = value
    if option.pattern is not None:
        schema["pattern"] = option.pattern
    if option.default is not None:
        schema["default"] = option.default
    return schema


_LENGTH = {"string": "Length", "array": "Items", "object": "Properties"}


def integral(value: Any) -> Any:
    """JSON Schema counts 3.0 as an integer: accept it as 3 (strings and 2.5 still fail)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def object_schema(
    names: Iterable[str], required: Iterable[str] = (), surface: str = "tool"
) -> dict[str, Any]:
    """An object of the named options (no other properties allowed)."""
    return {
        "type": "object",
        "properties": {name: property_schema(ARGUMENTS[name], surface) for name in names},
        "required": list(required),
        "additionalProperties": False,
    }


def check_value(option: Option, value: Any, surface: str, where: str = "") -> None:
    """A value against its option: JSON type, choices, bounds. Raises `InvalidRequest`
    (`bad_request`) naming the option, the same words on every surface."""
    label = f"{where}{option.name}"
    kind = _TYPES[option.kind]
    if (
        not isinstance(value, kind)
        or (isinstance(value, bool) and option.kind in ("integer", "number"))
        or (isinstance(value, float) and option.kind == "number" and value != value)
    ):
        raise InvalidRequest(f"{label} must be a JSON {option.kind}, got {value!r}")
    given: Any = value  # a number, a string or a list of the declared kind
    if option.choices is not None and given not in option.choices:
        raise InvalidRequest(f"{label} must be one of {', '.join(option.choices)}, got {value!r}")
    if option.minimum is not None and given < option.minimum:
        raise InvalidRequest(f"{label} must be at least {_plain(option.minimum)}, got {value!r}")
    maximum = option.maximum_on(surface)
    if maximum is not None and given > maximum:
        raise InvalidRequest(f"{label} must be at most {_plain(maximum)}, got {value!r}")
    if option.items is not None and not all(isinstance(v, _TYPES[option.items]) for v in given):
        raise InvalidRequest(f"{label} must list {option.items}s")
    _check_length(option, value, label)


def _check_length(option: Option, value: Any, label: str) -> None:
    """The declared lengths: characters, items or properties, items' characters, JSON size."""
    unit = {"string": "characters", "array": "items", "object": "properties"}.get(option.kind)
    if option.min_length is not None and len(value) < option.min_length:
        raise InvalidRequest(f"{label} must have at least {option.min_length} {unit}")
    if option.max_length is not None and len(value) > option.max_length:
        raise InvalidRequest(
            f"{label} must have at most {option.max_length:,} {unit}, got {len(value):,}"
        )
    if option.pattern is not None and not re.search(option.pattern, value):
        raise InvalidRequest(f"{label} must hold a visible character")
    low, high = option.item_min_length, option.item_max_length
    for item in value if option.items == "string" else ():
        if (low is not None and len(item) < low) or (high is not None and len(item) > high):
            raise InvalidRequest(f"{label} items must have {low} to {high} characters")
    if option.max_json is not None:
        size = len(json.dumps(value, ensure_ascii=False, default=str))
        if size > option.max_json:
            raise InvalidRequest(
                f"{label} must be at most {option.max_json:,} characters as JSON, got {size:,}"
            )


def check_arguments(
    names: Iterable[str],
    required: Iterable[str],
    arguments: Mapping[str, Any],
    surface: str = "tool",
    where: str = "",
) -> dict[str, Any]:
    """Arguments against an `object_schema`: required ones present, none unknown, each
    value valid. Returns them with integers written as 3.0 made 3. Raises `InvalidRequest`
    (`bad_request`)."""
    known = list(names)
    unknown = sorted(set(arguments) - set(known))
    if unknown:
        raise InvalidRequest(
            f"{where}unknown argument(s) {', '.join(unknown)}", f"use {', '.join(known)}"
        )
    for name in required:
        if name not in arguments:
            raise InvalidRequest(f"{where}missing argument {name!r}")
    out = {}
    for name, value in arguments.items():
        option = ARGUMENTS[name]
        out[name] = integral(value) if option.kind == "integer" else value
        check_value(option, out[name], surface, where)
    return out


def _plain(number: float) -> str:
    return str(int(number)) if float(number).is_integer() else str(number)


def check_query(query: Any) -> str:
    """The query, if it is a string within the declared length: the one check of a query,
    made where it enters (`ragloom.index`, `ragloom.engine.reading`), before any read."""
    if not isinstance(query, str):
        raise InputError(f"query must be a string, got {type(query).__name__}")
    if len(query) > MAX_QUERY_CHARS:
        check_value(ARGUMENTS["query"], query, "library")  # the words every interface says
    return query
