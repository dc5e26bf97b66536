"""A search's ranking from its legs' answers, as pure functions, in order: the one
composition of their answers, both fused or one alone, with what the legs noted on the way
(`rank_answers`), then the controls and the top k (`refine`). The engine plans and runs the
legs in a snapshot (`ragloom.engine.legs`), evaluation answers from the lists it fetched once
(`ragloom.evaluation.leg_cache`), and both rank what they get here, so a setting scores what a
search with it returns."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ragloom.errors import EmbeddingError, InputError, NeedsVectors, ShardUnavailable, worded
from ragloom.retrieval import controls
from ragloom.retrieval.adaptive import Ranked
from ragloom.retrieval.controls import MetadataOf
from ragloom.retrieval.fusion import fuse
from ragloom.retrieval.pipeline import Candidate, Head, head_of
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
    run), the query's BM25 ceiling, the embedding error that stopped the dense leg, and what
    the collection's reader said of itself: the chunks still waiting for vectors (read when
    vectors are used) and the shards of a shard set it answered without."""

    lexical: Ranked | None = None
    dense: Ranked | None = None
    ceiling: float | None = None
    failed: EmbeddingError | None = None
    pending: int = 0
    missing: Sequence[str] = ()


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
    answers from its lexical leg, degraded (or raises when `strict`); what the reader said
    of itself is noted last (`noted`)."""
    mode = plan.mode
    if plan.depth == 0:
        return noted(Ranking([], mode), answers, options.strict)
    if mode != "hybrid" or answers.failed is not None:
        if answers.failed is not None:
            if options.strict:
                raise answers.failed
            failed = answers.failed
            ranked, _ = fuse(answers.lexical, None, ceiling=answers.ceiling)
            ranking = Ranking(ranked, mode, True, f"{failed.code}: {failed.message}")
            return noted(ranking, answers, options.strict)
        ranked, _ = fuse(answers.lexical, answers.dense, ceiling=answers.ceiling)
        return noted(Ranking(ranked, mode), answers, options.strict)
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
    ranking = Ranking(ranked, mode, floor=floor, below_floor=below)
    return noted(ranking, answers, options.strict)


def noted(ranking: Ranking, answers: LegAnswers, strict: bool) -> Ranking:
    """The ranking marked degraded when it used vectors while some chunks still wait for
    theirs, or was made without some shards of a shard set (`strict`: that raises)."""
    notes = []
    if ranking.mode != "lexical" and answers.pending:
        notes.append(
            f"{answers.pending} chunk(s) still wait for vectors (the embedding service failed "
            "when they were indexed); they are found by the lexical leg only"
        )
    if answers.missing:
        note = "answered without " + "; ".join(answers.missing)
        if strict:
            raise ShardUnavailable(note, "retry once the shard is back, or search without strict")
        notes.append(note)
    for note in notes:
        ranking.degraded = True
        ranking.reason = f"{ranking.reason}; {note}" if ranking.reason else note
    return ranking


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
