"""One search as configuration: which legs run, how they fuse, what is dropped.

`rank` is the pipeline's core. It takes the legs as functions so that it stays free of
storage and models: legs -> fuse -> thresholds -> top-k, and reports degradation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from ragloom.errors import EmbeddingError, InputError
from ragloom.lexical import BM25Params
from ragloom.retrieval import fusion, pipeline
from ragloom.retrieval.pipeline import DENSE, LEXICAL, Candidate

MODES = ("lexical", "dense", "hybrid")
MAX_TOP_K = 10_000

Leg = Callable[[str, int], tuple[np.ndarray, np.ndarray]]


def _positive_int(name: str, value: object, maximum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(f"{name} must be a positive integer, got {value!r}")
    if value > maximum:
        raise InputError(f"{name} must be at most {maximum}, got {value}")


@dataclass(frozen=True)
class SearchOptions:
    """Everything that shapes a search besides the query (validated on construction).

    `mode=None` means hybrid when the collection has vectors, lexical otherwise.
    `strict` turns a failed query embedding into an error instead of a degraded answer.
    """

    top_k: int = 5
    mode: str | None = None
    fusion: str = "rrf"
    rrf_k: float = 60.0
    weights: Mapping[str, float] = field(default_factory=dict)
    normalization: str = "minmax"
    candidates: int = 40
    min_dense_similarity: float = 0.45
    min_score: float | None = None
    bm25: BM25Params | None = None
    strict: bool = False

    def __post_init__(self) -> None:
        _positive_int("top_k", self.top_k, MAX_TOP_K)
        _positive_int("candidates", self.candidates, MAX_TOP_K)
        if self.mode is not None and self.mode not in MODES:
            raise InputError(f"unknown mode {self.mode!r}", f"use one of {', '.join(MODES)}")
        if self.fusion not in fusion.FUSIONS:
            raise InputError(f"unknown fusion {self.fusion!r}", "use rrf or weighted")
        if self.normalization not in fusion.NORMALIZATIONS:
            raise InputError(
                f"unknown normalization {self.normalization!r}", "use minmax or zscore"
            )
        if not -1.0 <= self.min_dense_similarity <= 1.0:
            raise InputError("min_dense_similarity must lie between -1 and 1")
        fusion._check_weights(self.weights)


@dataclass
class Ranking:
    """The ranked candidates of one search, and whether a leg was missing."""

    candidates: list[Candidate]
    mode: str
    degraded: bool = False
    reason: str | None = None


def rank(query: str, options: SearchOptions, lexical: Leg, dense: Leg | None) -> Ranking:
    """Run the legs the mode asks for, fuse, apply thresholds, keep the top k."""
    mode = options.mode or ("hybrid" if dense is not None else "lexical")
    if mode != "lexical" and dense is None:
        raise InputError(
            f"{mode} search needs vectors, and this collection has none",
            "index it with an embedding model, or use mode='lexical'",
        )
    depth = options.top_k if mode != "hybrid" else max(options.candidates, options.top_k)
    if mode == "lexical":
        rows, scores = lexical(query, depth)
        ranked = pipeline.leg_candidates(LEXICAL, rows, scores, alone=True)
        return Ranking(_finish(ranked, options), mode)
    if mode == "dense":
        rows, scores = dense(query, depth)  # type: ignore[misc]
        ranked = pipeline.leg_candidates(DENSE, rows, scores, alone=True)
        return Ranking(_finish(ranked, options), mode)
    lexical_rows, lexical_scores = lexical(query, depth)
    legs = {LEXICAL: pipeline.leg_candidates(LEXICAL, lexical_rows, lexical_scores)}
    try:
        dense_rows, dense_scores = dense(query, depth)  # type: ignore[misc]
    except EmbeddingError as exc:
        if options.strict:
            raise
        ranked = pipeline.leg_candidates(LEXICAL, lexical_rows, lexical_scores, alone=True)
        return Ranking(_finish(ranked, options), mode, True, f"{exc.code}: {exc.message}")
    legs[DENSE] = pipeline.leg_candidates(DENSE, dense_rows, dense_scores)
    fused = fusion.fuse(legs, options.fusion, options.rrf_k, options.weights, options.normalization)
    fused = pipeline.drop_weak_dense_only(fused, options.min_dense_similarity)
    return Ranking(_finish(fused, options), mode)


def _finish(candidates: list[Candidate], options: SearchOptions) -> list[Candidate]:
    return pipeline.top_k(pipeline.apply_min_score(candidates, options.min_score), options.top_k)
