"""Every search option, declared once: name, type, default, bounds and description.

The command line (`ragloom.contract.cli`), the HTTP request models and OpenAPI
(`ragloom.contract.http`), the MCP and OpenAI tool schemas (`ragloom.contract.schema`) and
the framework retrievers derive their parameters from this table, so an option added here
appears everywhere with the same name, bounds and error. An interface may cap a bound lower
(`limits`: the HTTP sidecar serves at most 100 hits, a tool call at most 50) but it says so
here, not in its own copy.
"""

from __future__ import annotations

from ragloom.contract.ask_options import ASK_OPTIONS
from ragloom.contract.option import (
    DEFAULT_TOP_K,
    HTTP_MAX_TOP_K,
    KINDS,
    MAX_DOCUMENT_ID_CHARS,
    MAX_FILTER_JSON,
    MAX_NAME_CHARS,
    MAX_QUERY_CHARS,
    MAX_TOP_K,
    SURFACES,
    TOOL_MAX_TOP_K,
    VISIBLE,
    Option,
)

__all__ = [
    "ARGUMENTS",
    "ASK_OPTIONS",
    "DEFAULT_TOP_K",
    "HTTP_MAX_TOP_K",
    "INDEX_OPTIONS",
    "KINDS",
    "MAX_DOCUMENT_ID_CHARS",
    "MAX_FILTER_JSON",
    "MAX_NAME_CHARS",
    "MAX_QUERY_CHARS",
    "MAX_TOP_K",
    "OPTIONS",
    "SEARCH_OPTIONS",
    "SURFACES",
    "TOOL_ARGUMENTS",
    "TOOL_MAX_TOP_K",
    "VISIBLE",
    "Option",
    "offered",
]

_FILTER = (
    'Metadata filter, e.g. {"chapter": {"$gte": 3}} or {"tags": {"$overlap": ["x"]}} '
    f"(see docs/controls.md); at most {MAX_FILTER_JSON:,} characters as JSON."
)

SEARCH_OPTIONS: tuple[Option, ...] = (
    Option(
        "top_k",
        "integer",
        "How many passages.",
        default=DEFAULT_TOP_K,
        short="-k",
        minimum=1,
        maximum=MAX_TOP_K,
        limits={"http": HTTP_MAX_TOP_K, "tool": TOOL_MAX_TOP_K},
    ),
    Option(
        "mode",
        "string",
        "Default: hybrid when the collection has vectors, else lexical.",
        choices=("lexical", "dense", "hybrid"),
        surfaces=("library", "cli", "http"),
    ),
    Option(
        "fusion",
        "string",
        "Default: the collection's own (ragloom tune --apply), else adaptive (each leg weighted"
        " per collection and per query; scores 0-1).",
        choices=("adaptive", "rrf", "weighted"),
        surfaces=("library", "cli", "http"),
    ),
    Option(
        "rrf_k",
        "number",
        "RRF's k (default 60).",
        minimum=0,
        maximum=10_000,
        surfaces=("library", "cli", "http"),
    ),
    Option(
        "weights",
        "object",
        "Per-leg fusion weights (lexical, dense, metadata); default: the fusion method's own.",
        flag="--weight",
        pairs=True,
        surfaces=("library", "cli", "http"),
    ),
    Option(
        "normalization",
        "string",
        "Score normalization of weighted fusion (default zscore).",
        choices=("minmax", "zscore"),
        surfaces=("library", "cli", "http"),
    ),
    Option(
        "candidates",
        "integer",
        "Hits each leg fetches (default 40).",
        minimum=1,
        maximum=MAX_TOP_K,
        limits={"http": 1000},
        surfaces=("library", "cli", "http"),
    ),
    Option(
        "min_dense_similarity",
        "number",
        "Drop dense-only hits below this cosine. Default: the floor measured for the"
        " collection's model (none for a model nobody measured); -1 keeps them all.",
        minimum=-1,
        maximum=1,
        flag="--min-similarity",
        surfaces=("library", "cli", "http"),
    ),
    Option(
        "min_score",
        "number",
        "Drop hits whose final score is lower. Scores of hybrid (adaptive), lexical and dense"
        " searches run from 0 to 1 and mean the same in every search of a collection.",
        surfaces=("library", "cli", "http"),
    ),
    Option("filters", "object", _FILTER, flag="--filter", max_length=100, max_json=MAX_FILTER_JSON),
    Option(
        "boosts",
        "array",
        'Boost rules: multiply the score of hits whose metadata matches "when" by "factor",'
        ' e.g. {"when": {"scholar_id": "calvin"}, "factor": 1.1}.',
        items="object",
        flag="--boost",
        surfaces=("library", "cli", "http"),
    ),
    Option(
        "diversity",
        "object",
        'At most N hits per metadata value ({"max_per": {"key": N}, "missing": "keep" or'
        ' "group"}) and/or maximal marginal relevance ({"mmr": {"lambda": 0.7}}).',
        surfaces=("library", "http"),
    ),
    Option(
        "prefer",
        "array",
        "Filters whose matches weighted fusion favours: the share a hit matches is a third signal,"
        ' weighted by weights["metadata"].',
        items="object",
        surfaces=("library", "cli", "http"),
    ),
    Option(
        "strict",
        "boolean",
        "Fail instead of answering degraded (BM25 alone, expansion, rerank or hops skipped).",
        default=False,
        surfaces=("library", "cli", "http"),
    ),
    Option(
        "expand",
        "string",
        "llm: search the query and LLM rephrasings together (needs an LLM); prf: RM3"
        " pseudo-relevance feedback on the lexical leg.",
        choices=("llm", "prf"),
        surfaces=("library", "cli", "http"),
    ),
    Option(
        "max_variants",
        "integer",
        "Queries searched with expand=llm, the original included.",
        default=5,
        minimum=2,
        maximum=8,
        flag="--variants",
        surfaces=("library", "cli", "http"),
    ),
    Option(
        "merge",
        "string",
        "How the variants' rankings merge.",
        default="rrf",
        choices=("rrf", "best"),
        surfaces=("library", "cli", "http"),
    ),
    Option(
        "rerank",
        "boolean",
        "Rerank the fused candidates (the server's --rerank reranker; the library and the"
        " command line also take a reranker spec such as onnx:FOLDER).",
        default=False,
        surfaces=("library", "http"),
    ),
    Option(
        "rerank_depth",
        "integer",
        "How many fused candidates the reranker scores.",
        default=30,
        minimum=1,
        maximum=MAX_TOP_K,
        limits={"http": 200},
        surfaces=("library", "cli", "http"),
    ),
    Option(
        "hops",
        "integer",
        "Multi-hop: up to this many retrieval rounds, the LLM deciding (needs an LLM).",
        default=1,
        minimum=1,
        maximum=5,
        surfaces=("library", "cli", "http"),
    ),
    Option(
        "explain",
        "boolean",
        "Attach each stage's contribution to every hit.",
        default=False,
        surfaces=("library", "cli", "http"),
    ),
    Option(
        "tokens",
        "boolean",
        "Report each hit's size in tokens.",
        default=False,
        surfaces=("library", "cli", "http"),
    ),
    Option(
        "bm25",
        "object",
        'BM25\'s term saturation and length normalisation for this search, e.g. {"k1": 1.2,'
        ' "b": 0.75} (default: the collection\'s). The library also takes a BM25Params; the'
        " command line says --k1 and --b.",
        surfaces=("library", "http"),
    ),
)

# The tools' own arguments (an LLM calls them): the query, collections by name, a budget,
# and the document range of get_document.
TOOL_ARGUMENTS: tuple[Option, ...] = (
    Option(
        "query",
        "string",
        "What to look for.",
        max_length=MAX_QUERY_CHARS,
        surfaces=("cli", "http", "tool"),
    ),
    Option(
        "collections",
        "array",
        "Collections to search together (default: the index's default collection).",
        items="string",
        min_length=1,
        max_length=16,
        item_min_length=1,
        item_max_length=MAX_NAME_CHARS,
        surfaces=("tool",),
    ),
    Option(
        "budget",
        "integer",
        "Max tokens of the context (cl100k).",
        minimum=1,
        maximum=1_000_000,
        surfaces=("library", "cli", "http", "tool"),
    ),
    Option(
        "document_id",
        "string",
        "A search hit's document_id.",
        min_length=1,
        max_length=MAX_DOCUMENT_ID_CHARS,
        pattern=VISIBLE,
        surfaces=("tool",),
    ),
    Option(
        "collection",
        "string",
        "The document's collection (default: default).",
        min_length=1,
        max_length=MAX_NAME_CHARS,
        surfaces=("tool",),
    ),
    Option("start", "integer", "First character.", minimum=0, maximum=2**62, surfaces=("tool",)),
    Option(
        "end", "integer", "End character (exclusive).", minimum=0, maximum=2**62, surfaces=("tool",)
    ),
)

# The options of indexing files (the library's `index_path` and `configure(chunking=...)`, the
# `index` command, `POST /index`). The chunk sizes' defaults are a new collection's; on the
# command line a size left out keeps the collection's own.
_INDEXING = ("library", "cli", "http")
INDEX_OPTIONS: tuple[Option, ...] = (
    Option(
        "include",
        "array",
        "Globs of files to take inside folders.",
        items="string",
        surfaces=_INDEXING,
    ),
    Option("exclude", "array", "Globs of files to leave out.", items="string", surfaces=_INDEXING),
    Option(
        "lenient",
        "boolean",
        "Replace invalid UTF-8 and skip bad JSONL lines.",
        default=False,
        surfaces=_INDEXING,
    ),
    Option(
        "keep_missing",
        "boolean",
        "Keep the documents of files gone from the folder (for a folder indexed in parts).",
        default=False,
        surfaces=_INDEXING,
    ),
    Option(
        "include_ignored",
        "boolean",
        "Index the files a .gitignore in the folder ignores too.",
        default=False,
        surfaces=_INDEXING,
    ),
    Option(
        "max_chars",
        "integer",
        "Max characters a chunk (0: each document whole).",
        default=400,
        minimum=0,
        maximum=1_000_000,
        flag="--chunk-size",
        surfaces=_INDEXING,
    ),
    Option(
        "overlap",
        "integer",
        "Characters shared by adjacent chunks; smaller than max_chars unless that is 0 (a"
        " rule between two fields, which JSON Schema cannot state: refused with bad_input).",
        default=80,
        minimum=0,
        maximum=1_000_000,
        surfaces=_INDEXING,
    ),
    Option(
        "min_chars",
        "integer",
        "Drop fragments shorter than this.",
        default=20,
        minimum=0,
        maximum=1_000_000,
        flag="--min-chunk",
        surfaces=_INDEXING,
    ),
)

OPTIONS: dict[str, Option] = {o.name: o for o in SEARCH_OPTIONS}
ARGUMENTS: dict[str, Option] = {
    **OPTIONS,
    **{o.name: o for o in TOOL_ARGUMENTS},
    **{o.name: o for o in INDEX_OPTIONS},
    **{o.name: o for o in ASK_OPTIONS},
}


def offered(surface: str) -> tuple[Option, ...]:
    """The search options one surface offers, in declaration order."""
    return tuple(o for o in SEARCH_OPTIONS if o.offered_on(surface))
