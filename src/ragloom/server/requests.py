"""Request bodies of the HTTP API (pydantic models; they shape /openapi.json). Their search
options are derived from the one declaration in `ragloom.contract.options`."""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from annotated_types import Interval
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    create_model,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema

from ragloom.contract.http import Int, fields, integral
from ragloom.contract.http import field as contract_field
from ragloom.contract.options import ARGUMENTS as OPTIONS_AND_ARGUMENTS
from ragloom.contract.options import HTTP_MAX_TOP_K, OPTIONS, offered

MAX_TOP_K = HTTP_MAX_TOP_K
MAX_PAGE = 1000
MAX_OFFSET = 2**62  # SQLite integers are 64-bit


def _encodable(value: str) -> str:
    """Reject lone surrogates: JSON allows "\\ud800" but such text cannot be stored."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("text must be valid Unicode (no lone surrogate escapes)") from None
    return value


def _json_value(value: Any) -> Any:
    """Check a metadata value is plain, finite JSON with storable strings."""
    if isinstance(value, str):
        _encodable(value)
    elif isinstance(value, float) and not math.isfinite(value):
        raise ValueError("metadata numbers must be finite (no NaN or Infinity)")
    elif isinstance(value, dict):
        for key, item in value.items():
            _encodable(key)
            _json_value(item)
    elif isinstance(value, list):
        for item in value:
            _json_value(item)
    return value


Text = Annotated[str, AfterValidator(_encodable)]
Name = Annotated[str, Field(min_length=1, max_length=200), AfterValidator(_encodable)]
Metadata = Annotated[dict[str, Any], AfterValidator(_json_value)]
# Some character that no regex engine (Python, Rust, ECMA) nor `str.strip()` calls whitespace.
_VISIBLE = r"[^\s\x1c-\x1f\x85\ufeff]"
DocId = Annotated[
    str, Field(min_length=1, max_length=1024, pattern=_VISIBLE), AfterValidator(_encodable)
]
PathText = Annotated[
    str, Field(min_length=1, max_length=4096, pattern=r"^[^\x00]*$"), AfterValidator(_encodable)
]


class _Strict(BaseModel):
    """Requests: no type coercion ("3" is not 3) and no unknown fields (typos fail loudly)."""

    model_config = ConfigDict(strict=True, extra="forbid")


class DocumentIn(_Strict):
    """An inline document to index."""

    id: DocId
    text: Text
    title: Text | None = None
    source: Text | None = None
    metadata: Metadata = Field(default_factory=dict)


def _not_null(value: Any) -> Any:
    """Optional fields may be left out, but not sent as null (the schema does not allow it)."""
    if value is None:
        raise ValueError("may be left out, but not null")
    return value


def _no_default(schema: dict[str, Any]) -> None:
    """Leave out `"default": null` for fields whose schema does not allow null."""
    schema.pop("default", None)


_integral = integral


class _Chunking(_Strict):
    """Chunking of the collection (applies to documents indexed from now on)."""


ChunkingIn = create_model(  # type: ignore[call-overload]
    "ChunkingIn",
    __base__=_Chunking,
    __module__=__name__,
    **fields(("max_chars", "overlap", "min_chars")),
)


class NovelEnrichIn(_Strict):
    """The novel-writing enrichers: characters, scene type, tone, importance, key events."""

    characters: list[Annotated[str, Field(min_length=1, max_length=200)]] = Field(
        default_factory=list, max_length=1000
    )
    importance_base: Int = Field(4, ge=1, le=10)


class EnrichIn(_Strict):
    novel: NovelEnrichIn | None = None


class IndexRequest(_Strict):
    """`POST /index`: either a `path` under a configured root or inline `documents`."""

    model_config = ConfigDict(
        json_schema_extra={"oneOf": [{"required": ["path"]}, {"required": ["documents"]}]}
    )

    path: Annotated[PathText | SkipJsonSchema[None], BeforeValidator(_not_null)] = Field(
        None,
        description="A file or folder under one of the server's --root folders.",
        json_schema_extra=_no_default,
    )
    documents: Annotated[list[DocumentIn] | SkipJsonSchema[None], BeforeValidator(_not_null)] = (
        Field(None, description="Inline documents to index.", json_schema_extra=_no_default)
    )
    collection: Name | None = None
    include: list[Text] = Field(
        default_factory=list, description=OPTIONS_AND_ARGUMENTS["include"].description
    )
    exclude: list[Text] = Field(
        default_factory=list, description=OPTIONS_AND_ARGUMENTS["exclude"].description
    )
    lenient: bool = contract_field(OPTIONS_AND_ARGUMENTS["lenient"])[1]
    keep_missing: bool = contract_field(OPTIONS_AND_ARGUMENTS["keep_missing"])[1]
    include_ignored: bool = contract_field(OPTIONS_AND_ARGUMENTS["include_ignored"])[1]
    chunking: ChunkingIn | None = Field(  # type: ignore[valid-type]
        None, description="Set the collection's chunking first."
    )
    title_weight: Annotated[int, Interval(ge=0, le=10), BeforeValidator(_integral)] | None = Field(
        None, description="Count each title's terms this often in its chunks."
    )
    enrich: EnrichIn | None = Field(None, description="Enrichers adding chunk metadata.")

    @model_validator(mode="after")
    def _one_source(self) -> IndexRequest:
        if (self.path is None) == (self.documents is None):
            raise ValueError('give exactly one of "path" or "documents"')
        return self


Filter = Annotated[dict[str, Any], AfterValidator(_json_value)]


class BoostIn(_Strict):
    """Multiply the score of hits whose metadata matches `when` by `factor`."""

    when: Filter = Field(description=OPTIONS["filters"].description)
    factor: float = Field(gt=0, allow_inf_nan=False)
    label: Annotated[str, Field(max_length=200)] | None = None


class MMRIn(_Strict):
    lambda_: float = Field(0.7, ge=0, le=1, alias="lambda")


class DiversityIn(_Strict):
    """At most N hits per metadata value, and/or maximal marginal relevance."""

    max_per: dict[
        Annotated[str, Field(min_length=1)],
        Annotated[int, Interval(ge=1), BeforeValidator(_integral)],
    ] = Field(default_factory=dict)
    missing: Literal["keep", "group"] = Field(
        "keep",
        description='Hits without a capped key: "keep" (never capped) or "group" (they share'
        " one cap, like a value of their own).",
    )
    mmr: MMRIn | None = None


class _Controls(_Strict):
    """How one search runs: legs, fusion, filters, boosts, diversity, steps (see
    docs/controls.md). The fields are derived from `ragloom.contract.options`."""

    def search_kwargs(self) -> dict[str, Any]:
        """Keywords for `Index.search`: the options set (None leaves the engine's default)."""
        out: dict[str, Any] = {}
        for name in CONTROLS:
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, BaseModel):
                value = value.model_dump(by_alias=True, exclude_none=True)
            elif isinstance(value, list):
                value = [
                    v.model_dump(by_alias=True, exclude_none=True)
                    if isinstance(v, BaseModel)
                    else v
                    for v in value
                ]
            out[OPTIONS[name].keyword] = value
        return out


# The search options of /query's body and of each of its `collections`, with the server's
# shapes for the options whose values are objects.
CONTROLS = tuple(o.name for o in offered("http") if o.name not in ("top_k", "explain", "tokens"))
_SHAPES: dict[str, Any] = {
    "weights": dict[Literal["lexical", "dense", "metadata"], Annotated[float, Field(ge=0)]],
    "filters": Filter,
    "boosts": Annotated[list[BoostIn], Field(max_length=50)],
    "diversity": DiversityIn,
    "prefer": Annotated[list[Filter], Field(max_length=50)],
}
SearchControls = create_model(  # type: ignore[call-overload]
    "SearchControls", __base__=_Controls, __module__=__name__, **fields(CONTROLS, _SHAPES)
)


TopK, _ = contract_field(OPTIONS["top_k"])
Budget, _ = contract_field(OPTIONS_AND_ARGUMENTS["budget"])


class CollectionRequest(SearchControls):  # type: ignore[valid-type,misc]
    """One collection of a multi-collection query, with its own top_k, label and controls."""

    collection: Name
    top_k: TopK = contract_field(OPTIONS["top_k"])[1]
    label: Annotated[str, Field(max_length=200), AfterValidator(_encodable)] | None = None


class QueryRequest(SearchControls):  # type: ignore[valid-type,misc]
    """`POST /query`."""

    query: Annotated[str, Field(max_length=10_000), AfterValidator(_encodable)]
    top_k: TopK = contract_field(OPTIONS["top_k"])[1]
    collection: Name | None = Field(
        None,
        description='Default "default" (no results until something is indexed into it). Naming'
        " an unknown collection is a 404, except while the index is still empty (no collection"
        " at all): then the answer is ok with no results.",
    )
    collections: list[CollectionRequest] | None = Field(
        None,
        min_length=1,
        max_length=16,
        description="Search several collections at once (each its own top_k, label, controls);"
        " the answer has `groups` and `results` merged by rank.",
    )
    budget: Budget = contract_field(OPTIONS_AND_ARGUMENTS["budget"])[1]
    explain: bool = contract_field(OPTIONS["explain"])[1]
    tokens: bool = contract_field(OPTIONS["tokens"])[1]
