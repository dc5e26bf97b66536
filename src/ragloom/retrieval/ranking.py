"""A search's ranking from its legs' answers, as pure functions, in order: which legs a
search runs and how deep (`plan_legs`), how far a leg cut at top k is fetched to hold every
tie at the cut (`tie_depth`), the one composition of their answers, both fused or one alone
(`rank_answers`), then the controls and the top k (`refine`). The engine runs the legs in a
snapshot (`ragloom.engine.legs`), evaluation answers from the lists it fetched once
(`ragloom.evaluation.leg_cache`), and both rank what they get here, so a setting scores what a
search with it returns."""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ragloom.contract.options import MAX_TOP_K
from ragloom.errors import EmbeddingError, InputError, NeedsVectors, worded
from ragloom.retrieval import controls
from ragloom.retrieval.adaptive import Ranked
from ragloom.retrieval.controls import MetadataOf
from ragloom.retrieval.fusion import fuse
from ragloom.retrieval.pipeline import Candidate, Head, head_of, tie_score
from ragloom.retrieval.search_options import SearchOptions
from ragloom.timing import timed


@dataclass(frozen=True)
class LegPlan:
    """Which legs a search runs ("lexical", "dense" or both: "hybrid") and how many rows
    each fetches (0: the query asks nothing any leg could match); `exact`, for a single leg
    whose answer is the top k, that k (the leg is then fetched through the ties at its cut)."""

    mode: str
    depth: int
    exact: int | None = None


@dataclass
class LegAnswers:
    """What the legs found: each leg's rows and scores, best first (None: the leg did not
    run), the query's BM25 ceiling, and the embedding error that stopped the dense leg."""

    lexical: Ranked | None = None
    dense: Ranked | None = None
    ceiling: float | None = None
    failed: EmbeddingError | None = None


@dataclass
class Ranking:
    """The ranked candidates of one search, whether a leg was missing, and the dense-only
    floor that applied (None: none) with how many fused candidates fell below it."""

    candidates: list[Candidate]
    mode: str
    degraded: bool = False
    reason: str | None = None
    floor: float | None = None
    below_floor: int = 0
    options: SearchOptions | None = None  # as applied (with the collection's defaults)


def plan_legs(query: str, options: SearchOptions, has_dense: bool) -> LegPlan:
    """The legs `options` ask for over a collection with (or without) vectors, and their
    depth: the pool the controls after fusion need when they may reorder, or a hybrid
    search's, else the top k itself."""
    mode = options.mode or ("hybrid" if has_dense else "lexical")
    if mode != "lexical" and not has_dense:
        raise NeedsVectors(
            f"{mode} search needs vectors, and this collection has none",
            hints=worded("give it vectors with {reembed}, or search with {lexical}"),
        )
    if not asks_anything(query):  # no leg has anything to match (a dense model without a
        return LegPlan(mode, 0)  # floor ranked every chunk for "???", at cosine about 0)
    if mode == "hybrid" or options.reorders:
        return LegPlan(mode, options.pool_depth)
    k = options.top_k  # one row past the cut: whether it ties with the k-th
    return LegPlan(mode, min(k + 1, MAX_TOP_K), k)


def asks_anything(query: str) -> bool:
    """False for a query of only spaces and punctuation ("???", "-- //"): no word, number
    or symbol (emoji, currency) a leg could match."""
    return any(ch.isalnum() or unicodedata.category(ch) in ("So", "Sc", "Sm") for ch in query)


def tie_depth(scores: Any, k: int, depth: int, limit: int = MAX_TOP_K) -> int | None:
    """How deep to fetch a leg again when its answer at `depth` may end inside a tie with
    its k-th score (so that the top k breaks the tie by stable key, not by the rows the
    store had first); None when the answer holds every row tied with the k-th."""
    if not len(scores) == depth < limit or len(scores) <= k:
        return None  # every row the leg holds, or none past the k-th
    if tie_score(float(scores[-1])) != tie_score(float(scores[k - 1])):
        return None
    return min(depth * 4, limit)


def rank_answers(
    plan: LegPlan,
    answers: LegAnswers,
    options: SearchOptions,
    dense_floor: float | None = None,
    profile: Mapping[str, Any] | None = None,
    preferences: Mapping[int, float] | None = None,
) -> Ranking:
    """The legs' answers as one ranking (before the controls): a hybrid search's legs fused
    (`fusion.fuse`, the weak dense-only hits dropped: below the options' floor, else the
    model's `dense_floor`), or one leg alone, each hit scored by that leg's share (BM25 over
    the query's ceiling, or the cosine, 0 when negative; the raw score stays in
    `lexical_score` / `dense_score`). A hybrid search whose query could not be embedded
    answers from its lexical leg, degraded (or raises when `strict`)."""
    mode = plan.mode
    if plan.depth == 0:
        return Ranking([], mode)
    if mode != "hybrid" or answers.failed is not None:
        if answers.failed is not None:
            if options.strict:
                raise answers.failed
            failed = answers.failed
            ranked, _ = fuse(answers.lexical, None, ceiling=answers.ceiling)
            return Ranking(ranked, mode, True, f"{failed.code}: {failed.message}")
        ranked, _ = fuse(answers.lexical, answers.dense, ceiling=answers.ceiling)
        return Ranking(ranked, mode)
    with timed("fusion"):
        floor = options.min_dense_similarity
        floor = dense_floor if floor is None else floor
        ranked, below = fuse(
            answers.lexical,
            answers.dense,
            method=options.fusion,
            rrf_k=options.rrf_k,
            weights=options.weights,
            normalization=options.normalization,
            ceiling=answers.ceiling,
            profile=profile,
            preferences=preferences,
            floor=floor,
            keep=None if options.reorders else options.top_k,  # what the controls keep
        )
    return Ranking(ranked, mode, floor=floor, below_floor=below)


def refine(
    candidates: list[Candidate],
    options: SearchOptions,
    metadata: MetadataOf | None = None,
    vectors: Mapping[int, np.ndarray] | None = None,
) -> Head:
    """Boost -> minimum score -> per-key caps -> MMR -> top k, its ties still to be put in
    their stable order (`pipeline.ordered`, with the keys of `Head.tied`). `metadata` (row
    -> metadata, every candidate's) serves boosts and caps, `vectors` (row -> vector) MMR:
    the caller reads them only when the options ask (`needs_metadata`, `needs_vectors`)."""
    if options.boost_rules or options.caps:
        if metadata is None:
            raise InputError("boosts and caps need chunk metadata")
        candidates = controls.apply_boosts(candidates, options.boost_rules, metadata)
    candidates = controls.apply_min_score(candidates, options.min_score)
    if options.caps:
        candidates = controls.cap_per_key(
            candidates,
            options.caps,
            metadata,  # type: ignore[arg-type]
            options.cap_missing,
        )
    if options.mmr_lambda is not None:
        if vectors is None:
            raise NeedsVectors(
                "MMR diversity needs vectors, and this collection has none",
                hints=worded("give it vectors with {reembed}, or leave out mmr"),
            )
        pool = candidates[: options.pool_depth]
        matrix = _matrix([vectors[c.row_id] for c in pool])
        picked = controls.maximal_marginal_relevance(
            pool, matrix, options.top_k, options.mmr_lambda
        )
        return Head(options.top_k, picked)
    return head_of(candidates, options.top_k)


def needs_metadata(options: SearchOptions) -> bool:
    """Whether `refine` reads the candidates' metadata (boosts, caps)."""
    return bool(options.boost_rules or options.caps)


def needs_vectors(options: SearchOptions) -> bool:
    """Whether `refine` reads the candidates' vectors (MMR)."""
    return options.mmr_lambda is not None


def _matrix(vectors: Sequence[np.ndarray]) -> np.ndarray:
    return np.stack(vectors) if vectors else np.zeros((0, 0), np.float32)
