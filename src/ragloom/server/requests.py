"""Request bodies of the HTTP API (pydantic models; they shape /openapi.json). Their search
options are derived from the one declaration in `ragloom.contract.options`."""

from __future__ import annotations

import json
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
from ragloom.contract.options import (
    HTTP_MAX_TOP_K,
    MAX_DOCUMENT_ID_CHARS,
    MAX_NAME_CHARS,
    OPTIONS,
    VISIBLE,
    offered,
)

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
Name = Annotated[str, Field(min_length=1, max_length=MAX_NAME_CHARS), AfterValidator(_encodable)]
Metadata = Annotated[dict[str, Any], AfterValidator(_json_value)]
DocId = Annotated[
    str,
    Field(min_length=1, max_length=MAX_DOCUMENT_ID_CHARS, pattern=VISIBLE),
    AfterValidator(_encodable),
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


def _json_size(value: Any) -> Any:
    """A filter within its declared size as JSON (`ragloom.contract`: no schema keyword
    can say it)."""
    limit = OPTIONS["filters"].max_json
    if limit is not None and len(json.dumps(value, ensure_ascii=False)) > limit:
        raise ValueError(f"a filter must be at most {limit:,} characters as JSON")
    return value


Filter = Annotated[
    dict[str, Any],
    Field(max_length=OPTIONS["filters"].max_length),
    AfterValidator(_json_value),
    AfterValidator(_json_size),
]


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


class BM25In(_Strict):
    """BM25's parameters for one search (the collection's own when left out)."""

    k1: float | None = Field(None, ge=0, le=100, allow_inf_nan=False, description="Saturation.")
    b: float | None = Field(None, ge=0, le=1, description="Length normalisation.")


class _Controls(_Strict):
    """How one search runs: legs, fusion, filters, boosts, diversity, steps (see
    docs/controls.md). The fields are derived from `ragloom.contract.options`."""

    def search_kwargs(self, given_only: bool = False) -> dict[str, Any]:
        """Keywords for `Index.search`: the options set (None leaves the engine's default);
        `given_only`: only those the body gave (not the declared defaults)."""
        out: dict[str, Any] = {}
        for name in CONTROLS:
            if given_only and name not in self.model_fields_set:
                continue
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
    "bm25": BM25In,
}
SearchControls = create_model(  # type: ignore[call-overload]
    "SearchControls", __base__=_Controls, __module__=__name__, **fields(CONTROLS, _SHAPES)
)


TopK, _ = contract_field(OPTIONS["top_k"])
Budget, _ = contract_field(OPTIONS_AND_ARGUMENTS["budget"])


class CollectionRequest(SearchControls):  # type: ignore[valid-type,misc]
    """One collection of a multi-collection query, with its own top_k, label and controls."""

    collection: Name
    top_k: TopK = contract_field(OPTIONS["top_k"])[1]  # type: ignore[valid-type]
    label: Annotated[str, Field(max_length=200), AfterValidator(_encodable)] | None = None


class QueryRequest(SearchControls):  # type: ignore[valid-type,misc]
    """`POST /query`."""

    query: Annotated[
        str,
        Field(max_length=OPTIONS_AND_ARGUMENTS["query"].max_length),
        AfterValidator(_encodable),
    ]
    top_k: TopK = contract_field(OPTIONS["top_k"])[1]  # type: ignore[valid-type]
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
    budget: Budget = contract_field(OPTIONS_AND_ARGUMENTS["budget"])[1]  # type: ignore[valid-type]
    explain: bool = contract_field(OPTIONS["explain"])[1]
    tokens: bool = contract_field(OPTIONS["tokens"])[1]
