"""A search's options from the keywords the interfaces pass (`Index.search(query, **kw)`,
`search_many`'s requests), so the library, the command line and HTTP build them alike."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import fields
from typing import Any

from ragloom.config import SEARCH_SETTINGS
from ragloom.contract.options import ARGUMENTS
from ragloom.contract.schema import integral
from ragloom.errors import InputError, InvalidRequest
from ragloom.retrieval.search_options import SearchOptions

Requests = list[tuple[str, "str | None", SearchOptions]]  # (collection, label, options)

# The public name of an option where SearchOptions' field is called otherwise: `tokens` is
# what the README, HTTP and the command line say; `with_tokens` stays accepted (older code).
ALIASES = {"tokens": "with_tokens"}
_HIDDEN = frozenset({"unset", "with_tokens"})  # not offered in messages (internal or older)
KNOWN = frozenset(f.name for f in fields(SearchOptions) if f.init) | frozenset(ALIASES)


def _public(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The keywords with public names turned into SearchOptions' fields; an unknown name is
    an InvalidRequest (`bad_request`, as on every interface) that names it and the known
    ones (not a TypeError naming a class)."""
    unknown = sorted(set(kwargs) - KNOWN - {"unset"})
    if unknown or "unset" in kwargs:
        name = unknown[0] if unknown else "unset"
        offered = sorted({"top_k", *KNOWN} - _HIDDEN)
        raise InvalidRequest(f"unknown search option {name!r}", f"known: {', '.join(offered)}")
    both = [alias for alias, field in ALIASES.items() if alias in kwargs and field in kwargs]
    if both:
        raise InvalidRequest(f"give {both[0]!r} or {ALIASES[both[0]]!r}, not both")
    return {ALIASES.get(k, k): v for k, v in kwargs.items()}


_PLAIN = frozenset({str, int, float, bool, type(None)})


def search_options(top_k: int = 5, **kwargs: Any) -> SearchOptions:
    """SearchOptions from `search`'s keywords (sequences made tuples). Fusion settings left
    out or None are marked unset: the collection's own defaults fill them in (`ragloom
    tune --apply`), else the global ones (`ragloom.retrieval.fusion.DEFAULT_FUSION`). A
    reranker spec or object given as `rerank` becomes this search's reranker.

    Options of plain data (strings, numbers, booleans, None, and dicts and lists of them:
    filters, boosts, weights) are built and validated once and reused, keyed by each value's
    type too (True is not 1); SearchOptions is frozen, and the reused one holds copies of the
    caller's dicts and lists, so changing them afterwards changes no search. Options holding
    an object (a reranker, an LLM) or more than `REUSED_VALUES` values are built every time
    (from copies too)."""
    room: list[float] = [REUSED_VALUES]
    try:
        key = (
            _frozen(top_k, room),
            tuple(sorted((name, _frozen(value, room)) for name, value in kwargs.items())),
        )
    except _NotData:
        return _options(top_k, {name: _copied(value) for name, value in kwargs.items()})
    return _reused_options(key)


REUSED_VALUES = 256  # options holding more values (a filter listing many ids) are not kept


class _NotData(Exception):
    """A keyword value holding something other than plain data (an object), or more values
    than options that are kept may hold."""


def _frozen(value: Any, room: list[float]) -> tuple[type, Any]:
    """A hashable copy of plain data, each value tagged with its type (so that 1, 1.0 and
    True, equal and hashed alike, stay apart); `_NotData` for anything else, or once more
    values than `room[0]` were copied."""
    room[0] -= 1
    if room[0] < 0:
        raise _NotData
    kind = type(value)
    if kind in _PLAIN:
        return kind, value
    if kind is dict:
        if not all(type(name) is str for name in value):
            raise _NotData
        return dict, tuple((name, _frozen(item, room)) for name, item in value.items())
    if kind is list or kind is tuple:
        return kind, tuple(_frozen(item, room) for item in value)
    raise _NotData


def _thawed(frozen: tuple[type, Any]) -> Any:
    """Plain data again from `_frozen`'s copy: new dicts and lists nobody else holds."""
    kind, value = frozen
    if kind is dict:
        return {name: _thawed(item) for name, item in value}
    if kind is list:
        return [_thawed(item) for item in value]
    if kind is tuple:
        return tuple(_thawed(item) for item in value)
    return value


def _copied(value: Any) -> Any:
    """A copy of a value of plain data (the value itself when it holds an object)."""
    try:
        return _thawed(_frozen(value, [float("inf")]))
    except _NotData:
        return value


@functools.lru_cache(maxsize=256)
def _reused_options(
    key: tuple[tuple[type, Any], tuple[tuple[str, tuple[type, Any]], ...]],
) -> SearchOptions:
    top_k, keywords = key
    return _options(_thawed(top_k), {name: _thawed(value) for name, value in keywords})


# Options whose values are integers: 3.0 is taken as 3 (JSON Schema counts it an integer).
_INTEGERS = frozenset(name for name, o in ARGUMENTS.items() if o.kind == "integer")


def _options(top_k: Any, kwargs: dict[str, Any]) -> SearchOptions:
    """`search_options` without the reuse."""
    top_k = integral(top_k)
    kwargs = {k: integral(v) if k in _INTEGERS else v for k, v in _public(kwargs).items()}
    unset = frozenset(k for k in SEARCH_SETTINGS if not kwargs.get(k) and kwargs.get(k) != 0)
    kwargs = {k: v for k, v in kwargs.items() if k not in unset}
    rerank = kwargs.get("rerank")
    if rerank is not None and not isinstance(rerank, bool):
        kwargs["reranker"], kwargs["rerank"] = rerank, True
    for name in ("boosts", "prefer"):
        if name in kwargs:
            kwargs[name] = tuple(kwargs[name] or ())
    return SearchOptions(top_k=top_k, unset=unset, **kwargs)


def collection_requests(requests: Sequence[dict[str, Any]], shared: dict[str, Any]) -> Requests:
    """(collection, label, options) of each `search_many` request; `shared` keywords apply
    to every request that does not set them."""
    if not isinstance(requests, Sequence) or not requests:
        raise InputError("search_many needs a non-empty list of collection requests")
    out = []
    for request in requests:
        if not isinstance(request, dict) or not isinstance(request.get("collection"), str):
            raise InputError(f"each request needs a 'collection' name, got {request!r}")
        params = {**shared, **{k: v for k, v in request.items() if k != "label"}}
        name = params.pop("collection")
        out.append((name, request.get("label"), search_options(**params)))
    return out
