"""The shared vocabulary: documents going in, chunks stored, hits coming out."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Structure:
    """Where a converted document's pages (slides, cells) and sections begin, as offsets
    into its text: what a converter (`ragloom.convert`) gives besides the text.

    Unit `i + 1` (pages, slides and cells count from 1; `numbers[i]` when given) covers
    `starts[i]` up to the next start. `kinds` holds a kind per unit when units differ
    ("markdown", "code" or "output" of notebook cells);
    `headings` are sections: (offset, level, title), in order. Slides and cells are hard
    boundaries for chunks; pages are not (a chunk may span two).
    """

    unit: str = "page"  # "page", "slide" or "cell"
    starts: tuple[int, ...] = ()
    kinds: tuple[str, ...] = ()
    headings: tuple[tuple[int, int, str], ...] = ()
    language: str | None = None  # the language of code units (a notebook's kernel)
    numbers: tuple[int, ...] = ()  # each unit's number when not its position (cell outputs)


@dataclass(frozen=True)
class Document:
    """One unit the caller indexes: a file, a JSONL record or an inline text.

    A converted file (PDF, HTML, ...) carries its `structure`, and `raw_hash`: a hash of
    its bytes and the converter's version that stands for its text, title and metadata in
    the content hash, so an unchanged file is known before it is converted again.
    """

    id: str
    text: str
    title: str | None = None
    source: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    collection: str | None = None  # overrides the collection named in the indexing call
    language: str | None = None  # a code language ("swift"): chunked as code, not prose
    structure: Structure | None = None  # pages, slides, cells and sections of a converted file
    raw_hash: str | None = None  # a converted file's bytes (and converter version), hashed


@dataclass(frozen=True)
class ChunkSpan:
    """A piece of a document: `document_text[start:end] == text`."""

    text: str
    start: int
    end: int
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Chunk:
    """A stored chunk: id is `{document_id}-{n}`; metadata is the document's plus its own."""

    id: str
    document_id: str
    n: int
    text: str
    start: int
    end: int
    metadata: dict[str, Any] = field(default_factory=dict)


def place_of(metadata: dict[str, Any]) -> str | None:
    """Where a chunk lies in its file, in words: "p. 3", "pp. 3-4", "slide 2", "cell 5"
    (from the `page`/`pages`, `slide` and `cell` a converted file's chunks carry)."""
    pages = metadata.get("pages")
    if isinstance(pages, list) and len(pages) > 1 and all(isinstance(p, int) for p in pages):
        return f"pp. {min(pages)}-{max(pages)}"
    for key, word in (("page", "p."), ("slide", "slide"), ("cell", "cell")):
        value = metadata.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return f"{word} {value}"
    return None


@dataclass
class Hit:
    """A retrieved chunk with its score, rank and where it came from."""

    rank: int
    score: float
    chunk_id: str
    document_id: str
    text: str
    start: int
    end: int
    source: str | None
    title: str | None
    metadata: dict[str, Any]
    collection: str
    match: str = "lexical"
    lexical_rank: int | None = None
    lexical_score: float | None = None
    dense_rank: int | None = None
    dense_score: float | None = None
    fused_score: float | None = None
    rerank_score: float | None = None  # the reranker's relevance score, when one ran
    hop: int | None = None  # multi-hop: the round that found this chunk
    tokens: int | None = None  # size of `text` in cl100k tokens, for prompt budgeting
    explain: dict[str, Any] | None = None
    pending: bool = False  # its vector is still being made: only the lexical leg finds it yet

    @property
    def place(self) -> str | None:
        """Its page (or slide, cell) in words: "p. 3" (see `place_of`)."""
        return place_of(self.metadata)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready form (used by the CLI's --json and the server); the passage is
        `text`, as on the Hit (HTTP answers also repeat it as `chunk`, their older name)."""
        extra = {"explain": self.explain} if self.explain is not None else {}
        return {
            **extra,
            "rank": self.rank,
            "score": self.score,
            "chunk_id": self.chunk_id,
            "document_id": self.document_id,
            "text": self.text,
            "start": self.start,
            "end": self.end,
            "source": self.source,
            "title": self.title,
            "metadata": self.metadata,
            "collection": self.collection,
            "match": self.match,
            "lexical_rank": self.lexical_rank,
            "lexical_score": self.lexical_score,
            "dense_rank": self.dense_rank,
            "dense_score": self.dense_score,
            "fused_score": self.fused_score,
            "rerank_score": self.rerank_score,
            "hop": self.hop,
            "tokens": self.tokens,
            "pending": self.pending,
        }


class SearchResult(list):  # list[Hit]
    """The hits of a search (a plain list of Hit) plus how the search went.

    `degraded` is True when a leg could not run (for example the embedding service was down)
    and the hits come from the remaining leg; `reason` says why. `timings` holds the
    milliseconds each stage took (`ragloom.timing`), set by `Index.search`.
    """

    def __init__(
        self,
        hits: list[Hit],
        mode: str,
        degraded: bool = False,
        reason: str | None = None,
        steps: dict[str, Any] | None = None,
        total_tokens: int | None = None,
    ) -> None:
        super().__init__(hits)
        self.mode = mode
        self.degraded = degraded
        self.reason = reason
        self.timings: dict[str, float] | None = None  # ms per stage (ragloom.timing.STAGES)
        self.dense_floor: float | None = None  # the floor dense-only hits had to reach
        self.below_floor = 0  # fused candidates dropped by it (why fewer than k came back)
        # What the service steps did: "expansion" (method, variants searched, fallback),
        # "rerank" (model, candidates, degraded), "hops" (trace, stopped). Empty without them.
        self.steps: dict[str, Any] = steps or {}
        self.total_tokens = total_tokens  # sum of the hits' tokens (with_tokens)

    def with_hits(self, hits: list[Hit]) -> SearchResult:
        """The same search's result holding other hits (copies shown to another audience)."""
        out = SearchResult(hits, self.mode, self.degraded, self.reason, self.steps)
        out.total_tokens, out.timings = self.total_tokens, self.timings
        out.dense_floor, out.below_floor = self.dense_floor, self.below_floor
        return out

    @property
    def variants(self) -> list[str] | None:
        """The queries searched when the query was expanded."""
        expansion = self.steps.get("expansion")
        return list(expansion["variants"]) if expansion else None

    @property
    def trace(self) -> list[dict[str, Any]] | None:
        """Multi-hop: one entry per hop (hop, query, new_chunk_ids, decision)."""
        hops = self.steps.get("hops")
        return list(hops["trace"]) if hops else None

    def to_dict(self) -> dict[str, Any]:
        extra = {"timings": self.timings} if self.timings is not None else {}
        out = {
            "mode": self.mode,
            "degraded": self.degraded,
            "reason": self.reason,
            "dense_floor": self.dense_floor,
            "below_floor": self.below_floor,
            "results": [h.to_dict() for h in self],
            **extra,
        }
        if self.total_tokens is not None:
            out["total_tokens"] = self.total_tokens
        return {**out, **self.steps}


@dataclass
class SearchGroup:
    """The hits of one collection in a multi-collection search."""

    collection: str
    label: str | None
    hits: SearchResult

    def to_dict(self) -> dict[str, Any]:
        return {"collection": self.collection, "label": self.label, **self.hits.to_dict()}


@dataclass
class MultiSearchResult:
    """Several collections searched in one call: grouped, and merged by reciprocal rank."""

    groups: list[SearchGroup]
    merged: list[Hit]

    @property
    def degraded(self) -> bool:
        return any(g.hits.degraded for g in self.groups)

    def to_dict(self) -> dict[str, Any]:
        return {
            "degraded": self.degraded,
            "groups": [g.to_dict() for g in self.groups],
            "merged": [h.to_dict() for h in self.merged],
        }
