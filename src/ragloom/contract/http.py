"""The options as pydantic fields, for the HTTP request models (and so /openapi.json).

`fields(names, overrides)` gives `create_model` keywords: each option's type, default,
bounds and description from `ragloom.contract.options`. Options whose values are objects
(filters, boosts, diversity, ...) take their annotation from the server, which knows their
inner shape; their default and description still come from the declaration.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Annotated, Any, Literal

from annotated_types import Interval
from pydantic import AllowInfNan, BeforeValidator, Field

from ragloom.contract.options import ARGUMENTS, Option
from ragloom.contract.schema import integral

__all__ = ["Int", "annotation", "field", "fields", "integral"]

Int = Annotated[int, BeforeValidator(integral)]


def annotation(option: Option) -> Any:
    """The Python type of an option's value (without `| None`)."""
    if option.choices is not None:
        return Literal[option.choices]  # type: ignore[valid-type]
    if option.kind == "integer":
        return Int
    if option.kind == "number":
        return float
    if option.kind == "boolean":
        return bool
    if option.kind == "string":
        return str
    raise ValueError(f"{option.name}: an {option.kind} option needs an annotation override")


def field(option: Option, surface: str = "http", kind: Any = None) -> tuple[Any, Any]:
    """(annotation, FieldInfo) of one option, for `create_model`: its type with its bounds
    (on `surface`), its default and description."""
    kind = annotation(option) if kind is None else kind
    maximum = option.maximum_on(surface)
    if option.minimum is not None or maximum is not None:
        interval = Interval(ge=option.minimum, le=maximum)
        if option.kind == "integer":  # the bounds before the 3.0 -> 3 conversion
            kind = Annotated[int, interval, BeforeValidator(integral)]
        else:
            kind = Annotated[kind, interval]
    if option.kind == "number":
        kind = Annotated[kind, AllowInfNan(False)]
    lengths = {
        "min_length": option.min_length,
        "max_length": option.max_length,
        "pattern": option.pattern,
    }
    extra: dict[str, Any] = {k: v for k, v in lengths.items() if v is not None}
    if extra:
        kind = Annotated[kind, Field(**extra)]
    if option.default is None:
        return kind | None, Field(None, description=option.description)
    return kind, Field(option.default, description=option.description)


def fields(
    names: Iterable[str], overrides: Mapping[str, Any] = {}, surface: str = "http"
) -> dict[str, Any]:
    """`create_model` keywords for the named options, in order."""
    return {name: field(ARGUMENTS[name], surface, overrides.get(name)) for name in names}
