"""Response bodies of the HTTP API (pydantic models; they shape /openapi.json). The request
bodies are in `ragloom.server.requests`, their search options derived from `ragloom.contract`."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


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


class LeftOut(BaseModel):
    """A file of the folder that a rule left out unread (counted, never dropped unseen)."""

    path: str
    rule: str = Field(description="Hidden, an include/exclude glob, or a default rule.")


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
    left_out: int = Field(0, description="Files of the folder a rule left out unread.")
    left_out_files: list[LeftOut] = Field(default_factory=list)
    failed: list[Failed] = Field(description="Files that could not be indexed, with why.")
    pending: int = Field(
        0,
        description="Chunks stored without a vector because the embedding service failed;"
        " searchable lexically now, embedded by the server's background retry.",
    )
    embedding_error: str | None = Field(None, description="Why vectors are pending.")
    embedding_seconds: float = Field(0.0, description="Time spent computing vectors.")
    removed: int = Field(
        0, description="Documents of files gone from the folder (or now left out), removed."
    )
    held: list[str] = Field(
        default_factory=list, description="Why documents of missing files were kept."
    )


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
    pending: bool = Field(
        False,
        description="Its vector is still being made (just indexed, or the embedding service"
        " was down): only the lexical leg can find it until then.",
    )
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
    page: int | None = Field(None, description="The first page (or slide) it is on, when known.")
    pages: list[int] | None = Field(None, description="Every page it spans, when several.")
    section: str | None = Field(None, description="The section it is in, when known.")


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
    watch: dict[str, Any] | None = Field(
        None,
        description="With --watch: the folders, native events or polling, the last change,"
        " what is pending (paths queued, chunks waiting for vectors).",
    )


class StatsResponse(BaseModel):
    model_config = ConfigDict(extra="allow")

    ok: Literal[True] = True
    path: str
    documents: int
    chunks: int
    pending: int = Field(0, description="Chunks waiting for vectors, all collections.")
    collections: dict[str, dict[str, Any]]
