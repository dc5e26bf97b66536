"""The options as `click` options, for the `ragloom` command line.

Each declared option (`ragloom.contract.options`) offered on the command line becomes one
option with its flag, default and help; its value is checked against the declaration by
`ragloom.contract.schema.check_value`, so a bad value fails with the library's words and
error code (`bad_request`), not with a wording of the command line's own. Values that are
objects come as JSON (`--filter '{"book": 2}'`, repeatable for lists) or as KEY=NUMBER
pairs (`--weight dense=0.7`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import click

from ragloom.contract.options import ARGUMENTS, Option
from ragloom.contract.schema import check_value
from ragloom.errors import InvalidRequest


def _json(option: Option, text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidRequest(f"{option.cli_flag}: not valid JSON ({exc.msg})") from None


def _pair(option: Option, text: str) -> tuple[str, float]:
    key, sep, raw = text.partition("=")
    try:
        if not sep or not key:
            raise ValueError
        return key, float(raw)
    except ValueError:
        raise InvalidRequest(f"{option.cli_flag}: expected KEY=NUMBER, got {text!r}") from None


def value_of(option: Option, raw: Any) -> Any:
    """The option's value from what click parsed (None: not given), checked against the
    declaration. JSON and KEY=NUMBER texts become objects; repeated ones a list."""
    if raw is None or raw == () or (option.kind == "boolean" and raw is False):
        return None
    if option.pairs:
        value: Any = dict(_pair(option, item) for item in raw)
    elif option.kind == "array" and option.items == "string":
        value = list(raw)
    elif option.kind == "array":
        value = [_json(option, item) for item in raw]
    elif option.kind == "object":
        value = _json(option, raw)
    else:
        value = raw
    check_value(option, value, "cli")
    return value


def click_option(option: Option, unset: bool = False) -> Callable[[Callable[..., Any]], Any]:
    """One declared option as a click option (its value as click parsed it). `unset`: no
    default, so that an option left out keeps what is stored (a collection's chunking)."""
    names = [option.cli_flag, *([option.short] if option.short else []), option.name]
    help_text = option.description
    if option.kind == "boolean":
        return click.option(*names, is_flag=True, default=False, help=help_text)
    kinds: dict[str, Any] = {"integer": click.INT, "number": click.FLOAT, "string": click.STRING}
    kind = kinds.get(option.kind, click.STRING)  # choices and bounds: checked by `value_of`
    many = option.kind == "array" or option.pairs
    metavar = "KEY=N" if option.pairs else "JSON" if option.kind in ("object", "array") else None
    if option.items == "string":
        metavar = "TEXT"
    if option.choices is not None:
        metavar = "[" + "|".join(option.choices) + "]"
    return click.option(
        *names,
        type=kind,
        default=None if many or unset or option.default is None else option.default,
        show_default=option.default is not None and not many and not unset,
        multiple=many,
        metavar=metavar,
        help=help_text + (" (repeatable)" if many else ""),
    )


def options(names: Iterable[str], unset: bool = False) -> Callable[[Callable[..., Any]], Any]:
    """A decorator adding the named options, in order (`unset`: without defaults)."""
    decorators = [click_option(ARGUMENTS[name], unset) for name in names]

    def add(command: Callable[..., Any]) -> Any:
        for decorator in reversed(decorators):
            command = decorator(command)
        return command

    return add


def keywords(names: Iterable[str], params: Mapping[str, Any]) -> dict[str, Any]:
    """Library keywords of the named options from a command's parameters (the options
    given; those left out take the library's defaults)."""
    out = {}
    for name in names:
        option = ARGUMENTS[name]
        value = value_of(option, params.get(name))
        if value is not None:
            out[option.keyword] = value
    return out
