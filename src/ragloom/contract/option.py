"""What an option is (`Option`: name, type, default, bounds, description, surfaces) and the
bounds several declarations share; the declarations themselves are in
`ragloom.contract.options` and `ragloom.contract.ask_options`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# The interfaces an option can appear on.
SURFACES = ("library", "cli", "http", "tool")
# JSON kinds of option values.
KINDS = ("integer", "number", "boolean", "string", "object", "array")


@dataclass(frozen=True)
class Option:
    """One option of a search.

    `name` is the library keyword and the HTTP/tool field; `flag` the command-line spelling
    (default `--` + name with dashes). `minimum`/`maximum` bound numbers (inclusive);
    `limits` lowers the maximum on one surface. `choices` lists the allowed strings.
    `min_length`/`max_length` bound a string's characters, an array's items or an object's
    properties; `pattern` is a regular expression a string must contain a match of;
    `item_min_length`/`item_max_length` bound an array's string items; `max_json` bounds an
    object's or array's size written as JSON (characters), which no schema keyword can say.
    `default` None means "unset": the collection's own setting or the engine's default.
    `surfaces` lists where the option is offered.
    """

    name: str
    kind: str
    description: str
    default: Any = None
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] | None = None
    items: str | None = None  # an array's item kind
    flag: str | None = None
    short: str | None = None  # a one-letter command-line flag, e.g. -k
    pairs: bool = False  # on the command line: repeated KEY=NUMBER pairs, not JSON
    library: str | None = None  # the library keyword, when it differs from `name`
    limits: Mapping[str, float] = field(default_factory=dict)
    surfaces: tuple[str, ...] = SURFACES
    min_length: int | None = None
    max_length: int | None = None
    pattern: str | None = None
    item_min_length: int | None = None
    item_max_length: int | None = None
    max_json: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"{self.name}: unknown kind {self.kind!r}")
        unknown = set(self.surfaces) - set(SURFACES)
        if unknown:
            raise ValueError(f"{self.name}: unknown surface(s) {sorted(unknown)}")

    @property
    def cli_flag(self) -> str:
        """The command-line spelling, e.g. `--rerank-depth`."""
        return self.flag or "--" + self.name.replace("_", "-")

    @property
    def keyword(self) -> str:
        """The library keyword (`Index.search(query, **{keyword: value})`)."""
        return self.library or self.name

    def maximum_on(self, surface: str) -> float | None:
        """The upper bound on one surface: its own limit, else the option's."""
        return self.limits.get(surface, self.maximum)

    def offered_on(self, surface: str) -> bool:
        return surface in self.surfaces


MAX_TOP_K = 10_000  # the library's ceiling (a search reads at most this many hits)
HTTP_MAX_TOP_K = 100  # the sidecar's
TOOL_MAX_TOP_K = 50  # a tool call's (an LLM's context is small)
DEFAULT_TOP_K = 5

MAX_QUERY_CHARS = 10_000  # a query or a question
MAX_NAME_CHARS = 200  # a collection's name
MAX_DOCUMENT_ID_CHARS = 1024
MAX_FILTER_JSON = 100_000  # a filter written as JSON
# Some character that no regex engine (Python, Rust, ECMA) nor `str.strip()` calls whitespace.
VISIBLE = r"[^\s\x1c-\x1f\x85\ufeff]"
