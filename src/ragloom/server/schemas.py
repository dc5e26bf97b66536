"""Request and response bodies of the HTTP API (pydantic models; they shape /openapi.json)."""

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


Int = Annotated[int, BeforeValidator(_integral)]  # JSON Schema counts 2.0 as an integer


class ChunkingIn(_Strict):
    """Chunking of the collection (applies to documents indexed from now on)."""

    max_chars: Int = Field(400, ge=0, le=1_000_000, description="0: each document whole.")
    overlap: Int = Field(80, ge=0, le=1_000_000)
    min_chars: Int = Field(20, ge=0, le=1_000_000)


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
    include: list[Text] = Field(default_factory=list, description="Globs of files to take.")
    exclude: list[Text] = Field(default_factory=list, description="Globs of files to skip.")
    lenient: bool = Field(False, description="Replace invalid UTF-8, skip bad JSONL lines.")
    chunking: ChunkingIn | None = Field(None, description="Set the collection's chunking first.")
    title_weight: Annotated[int, Interval(ge=0, le=10), BeforeValidator(_integral)] | None = Field(
        None, description="Count each title's terms this often in its chunks."
    )
    enrich: EnrichIn | None = Field(None, description="Enrichers adding chunk metadata.")

    @model_validator(mode="after")
    def _one_source(self) -> IndexRequest:
        if (self.path is None) == (self.documents is None):
            raise ValueError('give exactly one of "path" or "documents"')
        return self


Filter = Annotated[
    dict[str, Any],
    AfterValidator(_json_value),
    Field(description='Metadata filter, e.g. {"chapter_num": {"$gte": 9}} (see docs).'),
]


class BoostIn(_Strict):
    """Multiply the score of hits whose metadata matches `when` by `factor`."""

    when: Filter
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


class SearchControls(_Strict):
    """How one search runs: legs, fusion, filters, boosts, diversity (see docs/controls.md)."""

    mode: Literal["lexical", "dense", "hybrid"] | None = Field(
        None, description="Default: hybrid when the collection has vectors, else lexical."
    )
    fusion: Literal["adaptive", "rrf", "weighted"] | None = Field(
        None,
        description="Default: the collection's own (ragloom tune --apply), else adaptive"
        " (each leg weighted per collection and per query; scores 0-1).",
    )
    rrf_k: float | None = Field(None, ge=0, le=10_000, allow_inf_nan=False, description="60")
    weights: dict[Literal["lexical", "dense", "metadata"], Annotated[float, Field(ge=0)]] | None = (
        Field(None, description="Per-leg weights; default: the fusion method's own.")
    )
    normalization: Literal["minmax", "zscore"] | None = Field(None, description="zscore")
    candidates: Annotated[int, Interval(ge=1, le=1000), BeforeValidator(_integral)] | None = Field(
        None, description="Hits each leg fetches (default 40)."
    )
    min_dense_similarity: float | None = Field(
        None,
        ge=-1,
        le=1,
        description="Drop dense-only hits below this cosine. Default: the floor measured for"
        " the collection's model (none for a model nobody measured); -1 keeps them all.",
    )
    min_score: float | None = Field(
        None,
        allow_inf_nan=False,
        description="Drop hits whose final score is lower. Scores of hybrid (adaptive),"
        " lexical and dense searches run from 0 to 1 and mean the same in every search of a"
        " collection (docs/search.md).",
    )
    filters: Filter | None = None
    boosts: list[BoostIn] = Field(default_factory=list, max_length=50)
    diversity: DiversityIn | None = None
    prefer: list[Filter] = Field(default_factory=list, max_length=50)
    strict: bool = Field(
        False,
        description="Fail (502/503) instead of answering degraded (BM25 alone, expansion, "
        "rerank or hops skipped).",
    )
    expand: Literal["llm", "prf"] | None = Field(
        None,
        description="llm: search the query and LLM rephrasings together (needs the server's "
        "--llm); prf: RM3 pseudo-relevance feedback on the lexical leg.",
    )
    max_variants: Annotated[int, BeforeValidator(_integral)] = Field(
        5, ge=2, le=8, description="Queries searched with expand=llm, the original included."
    )
    merge: Literal["rrf", "best"] = Field("rrf", description="How variants' rankings merge.")
    rerank: bool = Field(False, description="Rerank with the server's --rerank reranker.")
    rerank_depth: Annotated[int, BeforeValidator(_integral)] = Field(
        30, ge=1, le=200, description="How many fused candidates the reranker scores."
    )
    hops: Annotated[int, BeforeValidator(_integral)] = Field(
        1, ge=1, le=5, description="Multi-hop: up to this many retrieval rounds (needs --llm)."
    )

    def search_kwargs(self) -> dict[str, Any]:
        """Keywords for `Index.search`."""
        diversity = None
        if self.diversity is not None:
            diversity = {
                "max_per": dict(self.diversity.max_per),
                "missing": self.diversity.missing,
            }
            if self.diversity.mmr is not None:
                diversity["mmr"] = {"lambda": self.diversity.mmr.lambda_}
        return {
            "mode": self.mode,
            "fusion": self.fusion,
            "rrf_k": self.rrf_k,
            "weights": dict(self.weights) if self.weights is not None else None,
            "normalization": self.normalization,
            "candidates": self.candidates,
            "min_dense_similarity": self.min_dense_similarity,
            "min_score": self.min_score,
            "filters": self.filters,
            "boosts": [b.model_dump(exclude_none=True) for b in self.boosts],
            "diversity": diversity,
            "prefer": list(self.prefer),
            "strict": self.strict,
            "expand": self.expand,
            "max_variants": self.max_variants,
            "merge": self.merge,
            "rerank": self.rerank,
            "rerank_depth": self.rerank_depth,
            "hops": self.hops,
        }


class CollectionRequest(SearchControls):
    """One collection of a multi-collection query, with its own top_k, label and controls."""

    collection: Name
    top_k: Annotated[int, BeforeValidator(_integral)] = Field(DEFAULT_TOP_K, ge=1, le=MAX_TOP_K)
    label: Annotated[str, Field(max_length=200), AfterValidator(_encodable)] | None = None


class QueryRequest(SearchControls):
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
    collections: list[CollectionRequest] | None = Field(
        None,
        min_length=1,
        max_length=16,
        description="Search several collections at once (each its own top_k, label, controls);"
        " the answer has `groups` and `results` merged by rank.",
    )
    budget: Annotated[int, Interval(ge=1, le=1_000_000), BeforeValidator(_integral)] | None = Field(
        None, description="Token budget: `context` becomes a numbered, cited block within it."
    )
    explain: bool = Field(False, description="Attach each stage's contribution to every hit.")
    tokens: bool = Field(False, description="Report each hit's size in tokens.")


class FieldProblem(BaseModel):
    field: str | None = Field(description="The wrong field, e.g. `collections[0].top_k`.")
    in_: Literal["body", "query", "path"] = Field(alias="in", description="Where it was sent.")
    problem: str = Field(description='What is wrong with it, e.g. "must be at least 1".')


class ErrorResponse(BaseModel):
    """Every failure: `error` is a plain message string; `code` and `hint` stand beside it."""

    ok: Literal[False] = False
    error: str = Field(description="What went wrong, in plain words.")
    code: str = Field(description="Stable error code, e.g. bad_request, not_found (docs/http.md).")
    hint: str | None = Field(description="What to do about it, when ragloom knows.")
    details: list[FieldProblem] | None = Field(
        None, description="bad_request only: each wrong field and its problem."
    )


class Skipped(BaseModel):
    path: str
    reason: str


class Failed(BaseModel):
    """A file that could not be indexed (the others of the request were)."""

    path: str = Field(description="Relative to its root.")
    code: str
    reason: str
    hint: str | None = None
    offset: int | None = Field(None, description="Byte offset in the file, when known.")
    line: int | None = None


class IndexResponse(BaseModel):
    ok: Literal[True] = True
    collection: str
    file: str | None = Field(
        description="The path indexed, relative to its root; null for inline documents."
    )
    chunks: int = Field(
        description="Chunks the indexed documents hold now: those written plus those of"
        " unchanged documents (so re-indexing an unchanged file reports its chunk count)."
    )
    unchanged: bool = Field(
        description="True when nothing needed writing: every document was already indexed as is."
    )
    documents: int = Field(description="New or changed documents written.")
    documents_unchanged: int = Field(description="Documents already indexed as they are.")
    chunks_written: int = Field(description="Chunks written by this request.")
    fragments: int = Field(description="Pieces shorter than the collection's min_chars, dropped.")
    files: int
    skipped: list[Skipped]
    failed: list[Failed] = Field(description="Files that could not be indexed, with why.")
    pending: int = Field(
        0,
        description="Chunks stored without a vector because the embedding service failed;"
        " searchable lexically now, embedded by the server's background retry.",
    )
    embedding_error: str | None = Field(None, description="Why vectors are pending.")
    embedding_seconds: float = Field(0.0, description="Time spent computing vectors.")


class QueryHit(BaseModel):
    rank: int
    score: float
    text: str = Field(description="The passage (the chunk's text).")
    chunk: str = Field(
        description="Deprecated: the same as `text`, kept for clients written before it.",
        json_schema_extra={"deprecated": True},
    )
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
    rerank_score: float | None = Field(None, description="The reranker's score, when one ran.")
    hop: int | None = Field(None, description="Multi-hop: the round that found this chunk.")
    tokens: int | None = Field(None, description="Size of the chunk in tokens, for budgeting.")
    explain: dict[str, Any] | None = None


class QueryGroup(BaseModel):
    collection: str
    label: str | None
    mode: str
    degraded: bool
    reason: str | None
    results: list[QueryHit]
    timings: dict[str, float] | None = None
    dense_floor: float | None = None
    below_floor: int | None = None


class Passage(BaseModel):
    number: int
    collection: str
    document_id: str
    source: str | None
    title: str | None
    label: str | None
    start: int
    end: int
    chunk_ids: list[str]
    tokens: int
    truncated: bool


class QueryResponse(BaseModel):
    ok: Literal[True] = True
    results: list[QueryHit]
    context: str = Field(
        description='Chunk texts joined with "\\n---\\n", ready for a prompt; with `budget` or'
        " `collections`, a numbered, cited block with a grounding instruction."
    )
    context_tokens: int | None = Field(None, description="Tokens in `context` (packed only).")
    passages: list[Passage] | None = None
    groups: list[QueryGroup] | None = None
    mode: str | None = Field(None, description="lexical, dense or hybrid")
    degraded: bool | None = Field(
        None, description="True when a leg or step failed (embedding, LLM, reranker)"
    )
    reason: str | None = None
    timings: dict[str, float] | None = Field(
        None,
        description="Milliseconds per search stage (expand, embed, lexical, dense, fusion,"
        " rerank, hops, hydrate, other) and total; per group for multi-collection queries.",
    )
    total_tokens: int | None = Field(None, description="Tokens of all results (with tokens).")
    expansion: dict[str, Any] | None = Field(
        None, description="expand: method, variants searched, fallback (and its reason)."
    )
    rerank: dict[str, Any] | None = Field(
        None, description="The reranker's name, candidates scored, degraded (and reason)."
    )
    hops: dict[str, Any] | None = Field(
        None, description="Multi-hop trace (hop, query, new_chunk_ids, decision) and stopped."
    )
    dense_floor: float | None = Field(
        None, description="The cosine dense-only hits had to reach (null: no floor applied)."
    )
    below_floor: int | None = Field(
        None, description="Fused candidates dropped by the floor (why fewer than top_k came)."
    )


class DeleteResponse(BaseModel):
    ok: Literal[True] = True
    id: str
    collection: str
    chunks: int = Field(description="Chunks removed.")


class DocumentResponse(BaseModel):
    ok: Literal[True] = True
    id: str
    collection: str
    text: str = Field(description="The document's full text; hits' start/end index into it.")


class DocumentOut(BaseModel):
    id: str
    collection: str
    source: str | None
    title: str | None
    metadata: dict[str, Any]
    chunks: int
    content_hash: str
    indexed_at: float
    pending: int = Field(0, description="Chunks still waiting for a vector.")


class DocumentsResponse(BaseModel):
    ok: Literal[True] = True
    documents: list[DocumentOut]
    offset: int
    limit: int
    total: int


class IndexStatus(BaseModel):
    path: str = Field(description="The index file's name.")
    open: bool
    collections: int | None = None
    documents: int | None = None
    chunks: int | None = None
    pending: int | None = Field(None, description="Chunks waiting for vectors.")
    replicas: list[dict[str, Any]] | None = Field(
        None, description="A replicated store's servers: role, reachability, replay lag."
    )
    shards: list[dict[str, Any]] | None = Field(
        None, description="A shard set's shards: reachable or not, documents, replicas."
    )
    error: str | None = None


class HealthResponse(BaseModel):
    """Without the valid bearer token only `ok` (the server is up and its index usable)."""

    ok: bool
    version: str | None = None
    index: IndexStatus | None = None


class StatsResponse(BaseModel):
    model_config = ConfigDict(extra="allow")

    ok: Literal[True] = True
    path: str
    documents: int
    chunks: int
    pending: int = Field(0, description="Chunks waiting for vectors, all collections.")
    collections: dict[str, dict[str, Any]]
