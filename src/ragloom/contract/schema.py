"""JSON Schema of the options (`ragloom.contract.options`), for the OpenAI and MCP tools'
input schemas, and the one check of a tool call's arguments against them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ragloom.contract.options import ARGUMENTS, Option
from ragloom.errors import InvalidRequest

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
    if option.default is not None:
        schema["default"] = option.default
    return schema


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


def check_arguments(
    names: Iterable[str],
    required: Iterable[str],
    arguments: Mapping[str, Any],
    surface: str = "tool",
    where: str = "",
) -> None:
    """Arguments against an `object_schema`: required ones present, none unknown, each
    value valid. Raises `InvalidRequest` (`bad_request`)."""
    known = list(names)
    unknown = sorted(set(arguments) - set(known))
    if unknown:
        raise InvalidRequest(
            f"{where}unknown argument(s) {', '.join(unknown)}", f"use {', '.join(known)}"
        )
    for name in required:
        if name not in arguments:
            raise InvalidRequest(f"{where}missing argument {name!r}")
    for name, value in arguments.items():
        check_value(ARGUMENTS[name], value, surface, where)


def _plain(number: float) -> str:
    return str(int(number)) if float(number).is_integer() else str(number)
