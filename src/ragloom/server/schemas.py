"""Request and response bodies of the HTTP API (pydantic models; they shape /openapi.json)."""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema

MAX_TOP_K = 100
DEFAULT_TOP_K = 3
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


def _integral(value: Any) -> Any:
    """JSON Schema counts 3.0 as an integer: accept it as 3 (strings and 2.5 still fail)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


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
    include: list[Text] = Field(default_factory=list, description="Globs of files to take.")
    exclude: list[Text] = Field(default_factory=list, description="Globs of files to skip.")
    lenient: bool = Field(False, description="Replace invalid UTF-8, skip bad JSONL lines.")

    @model_validator(mode="after")
    def _one_source(self) -> IndexRequest:
        if (self.path is None) == (self.documents is None):
            raise ValueError('give exactly one of "path" or "documents"')
        return self


class QueryRequest(_Strict):
    """`POST /query`."""

    query: Annotated[str, Field(max_length=10_000), AfterValidator(_encodable)]
    top_k: Annotated[int, BeforeValidator(_integral)] = Field(
        DEFAULT_TOP_K, ge=1, le=MAX_TOP_K, description=f"How many chunks (1-{MAX_TOP_K})."
    )
    collection: Name | None = Field(
        None,
        description='Default "default" (no results until something is indexed into it). Naming'
        " an unknown collection is a 404, except while the index is still empty (no collection"
        " at all): then the answer is ok with no results.",
    )


class ErrorBody(BaseModel):
    code: str
    message: str
    hint: str | None = None
    details: list[dict[str, Any]] | None = None


class ErrorResponse(BaseModel):
    ok: Literal[False] = False
    error: ErrorBody


class Skipped(BaseModel):
    path: str
    reason: str


class IndexResponse(BaseModel):
    ok: Literal[True] = True
    collection: str
    file: str | None = Field(description="The path indexed (real path), null for inline documents.")
    files: int
    documents: int = Field(description="New or changed documents written.")
    chunks: int = Field(description="Chunks written.")
    unchanged: int = Field(description="Documents whose content was already indexed as is.")
    skipped: list[Skipped]
    noop: bool = Field(description="True when nothing was written (e.g. re-indexing unchanged).")


class QueryHit(BaseModel):
    rank: int
    score: float
    chunk: str
    source: str | None
    title: str | None
    chunk_id: str
    document_id: str
    start: int
    end: int
    metadata: dict[str, Any]
    collection: str
    match: str
    lexical_rank: int | None = None
    lexical_score: float | None = None
    dense_rank: int | None = None
    dense_score: float | None = None
    fused_score: float | None = None
    tokens: int | None = Field(None, description="Size of the chunk in tokens, for budgeting.")


class QueryResponse(BaseModel):
    ok: Literal[True] = True
    results: list[QueryHit]
    context: str = Field(description='Chunk texts joined with "\\n---\\n", ready for a prompt.')
    mode: str | None = Field(None, description="lexical, dense or hybrid")
    degraded: bool | None = Field(None, description="True when a leg failed (e.g. embedding)")
    reason: str | None = None


class DeleteResponse(BaseModel):
    ok: Literal[True] = True
    id: str
    collection: str
    chunks: int = Field(description="Chunks removed.")


class DocumentOut(BaseModel):
    id: str
    collection: str
    source: str | None
    title: str | None
    metadata: dict[str, Any]
    chunks: int
    content_hash: str
    indexed_at: float


class DocumentsResponse(BaseModel):
    ok: Literal[True] = True
    documents: list[DocumentOut]
    offset: int
    limit: int
    total: int


class IndexStatus(BaseModel):
    path: str
    open: bool
    collections: int | None = None
    documents: int | None = None
    chunks: int | None = None
    error: str | None = None


class HealthResponse(BaseModel):
    ok: bool
    version: str
    index: IndexStatus


class StatsResponse(BaseModel):
    model_config = ConfigDict(extra="allow")

    ok: Literal[True] = True
    path: str
    documents: int
    chunks: int
    collections: dict[str, dict[str, Any]]
