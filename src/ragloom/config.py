"""Per-collection configuration, stored with the collection so every process agrees."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

from ragloom.chunking import ChunkPolicy
from ragloom.chunking.code import language_for, language_named
from ragloom.contract.options import OPTIONS
from ragloom.contract.schema import check_value
from ragloom.errors import InputError
from ragloom.lexical import BM25Params
from ragloom.text import TokenizerConfig

CHUNK_MODES = ("auto", "prose", "markdown", "code")
# Settings a collection may give defaults for (`search`; `ragloom tune --apply` writes them).
SEARCH_SETTINGS = (
    "fusion",
    "rrf_k",
    "weights",
    "normalization",
    "candidates",
    "min_dense_similarity",
)
# Code chunks hold whole declarations: a function rarely fits prose's 400 characters.
DEFAULT_CODE_POLICY = ChunkPolicy(mode="code", max_chars=1500, overlap=200, min_chars=0)


@lru_cache(maxsize=64)
def _with_mode(policy: ChunkPolicy, mode: str) -> ChunkPolicy:
    return replace(policy, mode=mode)


@lru_cache(maxsize=64)
def _with_language(policy: ChunkPolicy, language: str | None) -> ChunkPolicy:
    return replace(policy, language=language or policy.language)


def _code_policy(value: Any) -> ChunkPolicy:
    """A code chunk policy from a ChunkPolicy or a (partial) dict over the code defaults."""
    if isinstance(value, ChunkPolicy):
        value = value.to_dict()
    if not isinstance(value, dict):
        raise InputError(f"code_chunking: expected a mapping, got {type(value).__name__}")
    return ChunkPolicy.from_dict({**DEFAULT_CODE_POLICY.to_dict(), **value})


def _search_settings(value: Any) -> dict[str, Any]:
    """Check a collection's default search settings: their names, and each value against its
    declaration (`ragloom.contract.options`: kind, choices, bounds); the engine checks them
    together as a search's options before it stores them (`ragloom.engine.collections`)."""
    if not isinstance(value, Mapping):
        raise InputError(f"search: expected a mapping, got {type(value).__name__}")
    unknown = set(value) - set(SEARCH_SETTINGS)
    if unknown:
        raise InputError(
            f"search: unknown setting(s) {', '.join(sorted(unknown))}",
            f"a collection's search defaults may set {', '.join(SEARCH_SETTINGS)}",
        )
    for key, setting in value.items():
        if setting is not None:
            check_value(OPTIONS[key], setting, "library", "search: ")
    return {k: (dict(v) if k == "weights" else v) for k, v in value.items()}


def _fusion_profile(value: Any) -> dict[str, Any]:
    """A stored probe profile, or {} when there is none (or it is not a mapping)."""
    return dict(value) if isinstance(value, Mapping) else {}


@dataclass(frozen=True)
class CollectionConfig:
    """Chunking, tokenization and BM25 settings of one collection.

    `chunk_mode="auto"` chunks source code by declarations (with `code_chunking`, larger
    than prose by default: 1,500 characters), Markdown files by headings and everything
    else as prose; the language of code comes from the source's suffix.
    `title_weight` counts a document's title terms that many times in each of its chunks.
    `embedding` names the model whose vectors the collection holds (None: lexical only).
    `search` holds the collection's own default search settings (fusion, weights, rrf_k,
    normalization, candidates, min_dense_similarity), for example as `ragloom tune` chose them.
    `fusion_profile` holds what probing the collection's own text found about its two legs
    (`ragloom.engine.calibration`): adaptive fusion, the default, weighs the legs by it.
    """

    chunking: ChunkPolicy = field(default_factory=ChunkPolicy)
    chunk_mode: str = "auto"
    code_chunking: ChunkPolicy = DEFAULT_CODE_POLICY
    tokenizer: TokenizerConfig = field(default_factory=TokenizerConfig)
    bm25: BM25Params = field(default_factory=BM25Params)
    title_weight: int = 1
    embedding: dict[str, Any] | None = None  # provider, model, dimension of stored vectors
    search: dict[str, Any] = field(default_factory=dict)  # default search settings (tuned)
    fusion_profile: dict[str, Any] = field(default_factory=dict)  # legs' probe MRRs

    def __post_init__(self) -> None:
        object.__setattr__(self, "search", _search_settings(self.search))
        if self.chunk_mode not in CHUNK_MODES:
            raise InputError(
                f"unknown chunk mode {self.chunk_mode!r}", f"use one of {', '.join(CHUNK_MODES)}"
            )
        if not isinstance(self.title_weight, int) or self.title_weight < 0:
            raise InputError("title_weight must be a non-negative integer")
        if self.code_chunking.mode != "code":
            raise InputError(
                f"code_chunking: mode must be 'code', got {self.code_chunking.mode!r}",
                "leave mode out of code_chunking",
            )

    def policy_for(self, source: str | None, language: str | None = None) -> ChunkPolicy:
        """The chunk policy for a document from `source` (code or Markdown by suffix in auto).

        `language` (a document's own, e.g. a JSONL record's "swift") names its code language
        when it is one; it wins over the source's suffix.
        """
        mode = self.chunk_mode
        if mode in ("auto", "code"):
            language = language_named(language) or language_for(source)
        else:
            language = None
        if mode == "auto":
            is_md = bool(source) and source.lower().endswith((".md", ".markdown"))  # type: ignore[union-attr]
            mode = "code" if language else ("markdown" if is_md else "prose")
        if mode == "code":
            return _with_language(self.code_chunking, language)
        return _with_mode(self.chunking, mode)

    def to_dict(self) -> dict[str, Any]:
        return {
            "chunking": self.chunking.to_dict(),
            "chunk_mode": self.chunk_mode,
            "code_chunking": self.code_chunking.to_dict(),
            "tokenizer": self.tokenizer.to_dict(),
            "bm25": {"k1": self.bm25.k1, "b": self.bm25.b},
            "title_weight": self.title_weight,
            "embedding": self.embedding,
            "search": dict(self.search),
            "fusion_profile": dict(self.fusion_profile),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CollectionConfig:
        return cls(
            chunking=ChunkPolicy.from_dict(data.get("chunking", {})),
            chunk_mode=data.get("chunk_mode", "auto"),
            code_chunking=_code_policy(data.get("code_chunking", {})),
            tokenizer=TokenizerConfig.from_dict(data.get("tokenizer", {})),
            bm25=BM25Params(**data.get("bm25", {})),
            title_weight=int(data.get("title_weight", 1)),
            embedding=data.get("embedding"),
            search=data.get("search") or {},
            fusion_profile=_fusion_profile(data.get("fusion_profile")),
        )
