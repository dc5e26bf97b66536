"""Request validation errors in plain words: which field, and what is wrong with it.

pydantic reports locations such as `body.path.function-after[_encodable(), constrained-str]`
and messages such as "Input should be a valid string"; clients (and people) need
"field 'path' must be a string". This module turns the one into the other.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from ragloom.server import requests

# Fields whose values are objects with caller-chosen keys (a key error names the key).
_KEYED = frozenset({"max_per", "weights", "metadata", "filters", "when"})


def _field_names(models: Iterable[type[BaseModel]]) -> frozenset[str]:
    """Every field name and alias of the request models, nested models included."""
    names: set[str] = set()
    todo, seen = list(models), set()
    while todo:
        model = todo.pop()
        if model in seen:
            continue
        seen.add(model)
        for name, info in model.model_fields.items():
            names.add(info.alias or name)
            names.add(name)
            for arg in _nested(info.annotation):
                todo.append(arg)
    return frozenset(names)


def _nested(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models inside a field's type (list[X], X | None, ...)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    found: list[type[BaseModel]] = []
    for arg in getattr(annotation, "__args__", ()) or ():
        found.extend(_nested(arg))
    origin = getattr(annotation, "__origin__", None)
    if origin is not None and getattr(annotation, "__metadata__", None) is not None:
        found.extend(_nested(origin))
    return found


FIELDS = _field_names([requests.IndexRequest, requests.QueryRequest])


def field_path(loc: Sequence[Any]) -> str:
    """`('body', 'collections', 0, 'top_k')` -> `collections[0].top_k`; type tags dropped."""
    path = ""
    keyed = False  # the previous field holds caller-chosen keys
    for part in loc[1:]:
        text = str(part)
        if isinstance(part, int) or text.isdigit():
            path += f"[{text}]"
            keyed = False
        elif keyed and text != "[key]":
            path += f"[{text!r}]"
            keyed = False
        elif text in FIELDS:
            path += f".{text}" if path else text
            keyed = text in _KEYED
    return path


def _count(n: Any, what: str) -> str:
    return f"{n} {what}" if n == 1 else f"{n} {what}s"


def problem(error: Mapping[str, Any]) -> str:
    """What is wrong with the value, in plain words ("must be at least 1")."""
    kind = str(error.get("type", ""))
    ctx = error.get("ctx") or {}
    simple = {
        "missing": "is required",
        "string_type": "must be a string",
        "int_type": "must be a whole number",
        "int_parsing": "must be a whole number",
        "int_from_float": "must be a whole number",
        "float_type": "must be a number",
        "float_parsing": "must be a number",
        "bool_type": "must be true or false",
        "bool_parsing": "must be true or false",
        "dict_type": "must be a JSON object",
        "model_type": "must be a JSON object",
        "model_attributes_type": "must be a JSON object",
        "list_type": "must be a list",
        "finite_number": "must be a finite number (no NaN or Infinity)",
        "none_required": "must be null",
        "string_pattern_mismatch": "must hold a visible character and no NUL byte",
    }
    if kind in simple:
        return simple[kind]
    if kind == "extra_forbidden":
        return "is not a field of this request"
    bounds = {
        "greater_than_equal": ("must be at least", "ge"),
        "greater_than": ("must be greater than", "gt"),
        "less_than_equal": ("must be at most", "le"),
        "less_than": ("must be less than", "lt"),
    }
    if kind in bounds:
        words, key = bounds[kind]
        return f"{words} {ctx.get(key)}"
    if kind == "string_too_short":
        n = ctx.get("min_length", 1)
        return "must not be empty" if n == 1 else f"must be at least {_count(n, 'character')}"
    if kind == "string_too_long":
        return f"must be at most {_count(ctx.get('max_length'), 'character')}"
    if kind == "too_short":
        return f"must hold at least {_count(ctx.get('min_length'), 'item')}"
    if kind == "too_long":
        return f"must hold at most {_count(ctx.get('max_length'), 'item')}"
    if kind == "literal_error":
        return f"must be one of {ctx.get('expected')}"
    message = str(error.get("msg", "is not valid")).removeprefix("Value error, ")
    return message[:1].lower() + message[1:]


def _suggestion(loc: Sequence[Any]) -> str:
    """ " (did you mean 'top_k'?)" for a misspelt field name, else ""."""
    close = difflib.get_close_matches(str(loc[-1]), sorted(FIELDS), n=1, cutoff=0.75)
    return f" (did you mean {close[0]!r}?)" if close else ""


def describe(errors: Sequence[Mapping[str, Any]]) -> list[dict[str, str | None]]:
    """One `{"field", "in", "problem"}` per wrong field (its first problem), in order."""
    items: list[tuple[str, str, str, str]] = []  # (where, field, type, problem)
    for error in errors:
        loc = [str(part) for part in error.get("loc", ())]
        kind = str(error.get("type", ""))
        field = field_path(loc)
        text = problem(error)
        if kind == "extra_forbidden" and len(loc) > 1:  # an unknown name: say which
            field = f"{field}.{loc[-1]}" if field else loc[-1]
            text += _suggestion(loc)
        items.append((loc[0] if loc else "body", field, kind, text))
    found: dict[tuple[str, str], dict[str, str | None]] = {}
    for where, field, kind, text in items:
        if kind == "none_required" and any(  # the `| None` half of an optional field
            other[1].startswith(field) and other[2] != kind for other in items
        ):
            continue
        found.setdefault((where, field), {"field": field or None, "in": where, "problem": text})
    return list(found.values())


def sentence(item: Mapping[str, str | None]) -> str:
    """`field 'top_k' must be at least 1`, `query parameter 'limit' ...`, or body-wide."""
    if not item["field"]:
        text = str(item["problem"])
        if text in ("is required", "must be a JSON object"):
            return f"the request body {text}"
        return text
    kind = "query parameter" if item["in"] == "query" else "field"
    return f"{kind} {item['field']!r} {item['problem']}"


def summary(items: Sequence[Mapping[str, str | None]]) -> str:
    """The error message: the first few problems, joined."""
    parts = [sentence(item) for item in items[:3]]
    more = len(items) - len(parts)
    return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "") or "invalid request"
