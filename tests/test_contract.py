"""One declaration of every search option (`ragloom.contract.options`): each interface
offers it with the same name, bounds and description, and refuses the same bad values."""

from __future__ import annotations

import click
import pytest

from ragloom.contract import OPTIONS, SEARCH_OPTIONS, offered
from ragloom.contract.schema import check_value
from ragloom.engine.keywords import search_options
from ragloom.errors import InputError
from ragloom.server.requests import CollectionRequest, QueryRequest
from ragloom.tools import SCHEMAS


def _http_property(schema: dict, name: str) -> dict:
    prop = schema["properties"][name]
    for alternative in prop.get("anyOf", ()):
        if alternative.get("type") != "null":
            return {**prop, **alternative}
    return prop


@pytest.mark.parametrize("option", offered("http"), ids=lambda o: o.name)
def test_http_request_fields_come_from_the_declaration(option) -> None:
    schema = QueryRequest.model_json_schema()
    prop = _http_property(schema, option.name)
    assert prop["description"] == option.description
    assert prop.get("minimum") == option.minimum
    assert prop.get("maximum") == option.maximum_on("http")
    if option.choices:
        assert prop["enum"] == list(option.choices)
    if option.default is not None:
        assert prop["default"] == option.default
    if option.name not in ("explain", "tokens"):  # shared by all collections of a query
        assert option.name in CollectionRequest.model_fields


@pytest.mark.parametrize("option", offered("tool"), ids=lambda o: o.name)
def test_tool_schemas_come_from_the_declaration(option) -> None:
    search = next(s for s in SCHEMAS if s["function"]["name"] == "search")["function"]
    prop = search["parameters"]["properties"][option.name]
    assert prop["description"] == option.description
    assert prop.get("minimum") == option.minimum
    assert prop.get("maximum") == option.maximum_on("tool")


def test_every_library_option_is_a_search_keyword() -> None:
    from ragloom.engine.keywords import KNOWN

    assert {o.keyword for o in offered("library")} <= KNOWN


BOUNDED = [o for o in SEARCH_OPTIONS if o.kind in ("integer", "number") and o.offered_on("library")]


@pytest.mark.parametrize("option", BOUNDED, ids=lambda o: o.name)
def test_the_library_refuses_what_the_declaration_refuses(option) -> None:
    step = 1 if option.kind == "integer" else 0.5
    outside = []
    if option.minimum is not None:
        outside.append(option.minimum - step)
    if option.maximum is not None:
        outside.append(option.maximum + step)
    for value in outside:
        value = int(value) if option.kind == "integer" else value
        with pytest.raises(InputError) as raised:
            search_options(**{option.keyword: value})
        assert raised.value.code == "bad_request"
        assert raised.value.message.startswith(f"{option.name} must be")
        with pytest.raises(InputError) as again:
            check_value(option, value, "library")
        assert again.value.message == raised.value.message


def test_a_surface_may_only_lower_a_bound() -> None:
    for option in SEARCH_OPTIONS:
        for limit in option.limits.values():
            assert option.maximum is None or limit <= option.maximum, option.name


def test_bools_are_not_numbers_and_nan_is_refused() -> None:
    with pytest.raises(InputError):
        check_value(OPTIONS["top_k"], True, "library")
    with pytest.raises(InputError):
        check_value(OPTIONS["min_score"], float("nan"), "library")


@pytest.mark.parametrize("option", offered("cli"), ids=lambda o: o.name)
def test_cli_options_come_from_the_declaration(option) -> None:
    """Every declared command-line option is a flag of `ragloom search` with the
    declaration's description as its help."""
    from ragloom.cli import cli

    search = cli.get_command(click.Context(cli), "search")
    params = {opt: p for p in search.params for opt in p.opts}
    assert option.cli_flag in params
    assert params[option.cli_flag].help.startswith(option.description)


def test_the_cli_refuses_with_the_library_words_and_code() -> None:
    """A value out of bounds on the command line fails as in the library: the same message
    and code, before any index is opened."""
    from ragloom.cli import cli
    from ragloom.errors import InvalidRequest

    for flag, value, name in (("--top-k", "0", "top_k"), ("--hops", "9", "hops")):
        with pytest.raises(InvalidRequest) as raised:
            cli.main(
                ["--index", "/nonexistent/x.db", "search", "q", flag, value],
                standalone_mode=False,
            )
        with pytest.raises(InvalidRequest) as library:
            search_options(**{name: int(value)})
        assert raised.value.message == library.value.message
        assert raised.value.code == "bad_request"


INDEXING = ("include", "exclude", "lenient", "max_chars", "overlap", "min_chars")


def test_indexing_options_come_from_the_declaration() -> None:
    """The indexing options too: `POST /index`'s chunking and file options and the `index`
    command's flags carry the declaration's descriptions and bounds."""
    from ragloom.cli import cli
    from ragloom.contract import ARGUMENTS
    from ragloom.server.requests import IndexRequest

    schema = IndexRequest.model_json_schema()
    chunking = schema["$defs"]["ChunkingIn"]["properties"]
    params = {opt: p for p in cli.get_command(click.Context(cli), "index").params for opt in p.opts}
    for name in INDEXING:
        option = ARGUMENTS[name]
        prop = chunking.get(name) or schema["properties"][name]
        assert prop["description"] == option.description
        assert prop.get("minimum") == option.minimum and prop.get("maximum") == option.maximum
        assert params[option.cli_flag].help.startswith(option.description)
        if option.kind == "integer":
            assert prop["default"] == option.default
            assert params[option.cli_flag].default is None  # left out: the collection's own
