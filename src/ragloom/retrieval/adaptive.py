"""Adaptive fusion, the default: each leg's score on an absolute scale, the legs weighted per
collection (from probes of its own text) and per query (from how the legs agree).

Scores a person can read: a hit's lexical share is its BM25 score over the most BM25 the
query could give any chunk (the sum of idf * (k1 + 1) over its terms), its dense share its
cosine (below 0 counts as 0); the fused score is the weighted mean of the two, between 0
and 1, comparable across searches of a collection, so that a `min_score` cut-off works.
A hit missing from one leg's candidates is counted at that leg's lowest candidate (what it
scored at most).

The weights: a collection's profile (`ragloom.retrieval.probes`) holds each leg's mean
reciprocal rank at finding its own chunks from one of their sentences; the dense leg gets
d^3 / (d^3 + l^3) of the weight (`SHARPNESS`), the lexical leg the rest, 0.5 each without a
profile, never beyond 0.15-0.85. Per query, a leg whose best hits the other leg also ranks
high gains weight: the log-odds of the dense weight move by `AGREEMENT` times (dense
support - lexical support), a leg's support being how high the other leg ranks its first
`SUPPORT_DEPTH` hits (1 / log2(1 + rank), 0 when absent, rank-discounted mean). The
constants were chosen on SciFact (train), CoSQA (dev), Cranfield and CISI (docs/hybrid.md,
"How the default was chosen").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ragloom.retrieval.pipeline import (
    DENSE,
    LEXICAL,
    Candidate,
    evolve,
)

ADAPTIVE = "adaptive"
SHARPNESS = 3.0  # how strongly the probes' MRR ratio tilts a collection's weights
AGREEMENT = 2.0  # how far one query's leg agreement moves the weights (log-odds)
SUPPORT_DEPTH = 3  # each leg's best hits whose standing in the other leg is looked at
NEUTRAL = 0.5  # the dense weight without a profile
BOUNDS = (0.15, 0.85)  # a collection's dense weight stays within these: no leg is ignored
Ranked = tuple[np.ndarray, np.ndarray]  # one leg's answer: row ids and scores, best first


@dataclass(frozen=True)
class QueryWeights:
    """The weights one query's fusion used, and why (shown by `explain`)."""

    lexical: float
    dense: float
    basis: str  # "probes", "no profile" or "caller"
    collection_dense: float  # the dense weight before the query's own shift
    lexical_support: float | None = None
    dense_support: float | None = None
    profile: Mapping[str, Any] | None = None
    ceiling: float | None = None  # the most BM25 the query could score

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"basis": self.basis}
        if self.ceiling is not None:
            out["lexical_ceiling"] = round(self.ceiling, 4)
        if self.profile:
            out["probes"] = {
                "lexical_mrr": self.profile.get("lexical_mrr"),
                "dense_mrr": self.profile.get("dense_mrr"),
                "count": self.profile.get("probes"),
            }
        out["collection_weights"] = {
            "lexical": round(1.0 - self.collection_dense, 4),
            "dense": round(self.collection_dense, 4),
        }
        if self.lexical_support is not None:
            out["agreement"] = {
                "lexical_support": round(self.lexical_support, 4),
                "dense_support": round(self.dense_support or 0.0, 4),
            }
        return out


def collection_dense_weight(profile: Mapping[str, Any] | None) -> tuple[float, str]:
    """(the dense leg's weight for a collection, its basis) from its probe profile."""
    if not profile:
        return NEUTRAL, "no profile"
    lexical = float(profile.get("lexical_mrr") or 0.0)
    dense = float(profile.get("dense_mrr") or 0.0)
    if lexical <= 0.0 and dense <= 0.0:
        return NEUTRAL, "no profile"
    dense_part, lexical_part = dense**SHARPNESS, lexical**SHARPNESS
    low, high = BOUNDS
    return min(high, max(low, dense_part / (dense_part + lexical_part))), "probes"


def support(own: Sequence[int], other: Sequence[int], depth: int = SUPPORT_DEPTH) -> float:
    """How high `other` ranks the first `depth` rows of `own`: the rank-discounted mean of
    1 / log2(1 + rank in other), 0 for a row `other` does not hold (0 when `own` is empty;
    a row `other` holds twice counts at its last rank)."""
    head = list(own[:depth])
    if not head:
        return 0.0
    position = dict(zip(other, range(1, len(other) + 1)))
    discounts = _DISCOUNTS[: len(head)] if depth <= SUPPORT_DEPTH else _discounts(len(head))
    got = sum(
        d * (1.0 / math.log2(position[row] + 1) if row in position else 0.0)
        for d, row in zip(discounts, head)
    )
    return got / sum(discounts)


def _discounts(count: int) -> list[float]:
    return [1.0 / math.log2(i + 1) for i in range(1, count + 1)]


_DISCOUNTS = _discounts(SUPPORT_DEPTH)


def query_weights(
    lexical_rows: Sequence[int],
    dense_rows: Sequence[int],
    profile: Mapping[str, Any] | None,
    caller: Mapping[str, float] | None = None,
    ceiling: float | None = None,
) -> QueryWeights:
    """The legs' weights for one query (they sum to 1). Weights the caller gave are used as
    they are (scaled to sum to 1), without adapting. `ceiling`, the query's most BM25, is
    carried along for `explain`."""
    if caller and (caller.get(LEXICAL) is not None or caller.get(DENSE) is not None):
        lexical = float(caller.get(LEXICAL, 0.0) or 0.0)
        dense = float(caller.get(DENSE, 0.0) or 0.0)
        total = lexical + dense
        share = NEUTRAL if total <= 0 else dense / total
        return QueryWeights(1.0 - share, share, "caller", share, ceiling=ceiling)
    base, basis = collection_dense_weight(profile)
    lexical_support = support(lexical_rows, dense_rows)
    dense_support = support(dense_rows, lexical_rows)
    logit = math.log(base / (1.0 - base)) + AGREEMENT * (dense_support - lexical_support)
    dense = 1.0 / (1.0 + math.exp(-logit))
    return QueryWeights(
        1.0 - dense,
        dense,
        basis,
        base,
        lexical_support,
        dense_support,
        profile if basis == "probes" else None,
        ceiling,
    )


def lexical_shares(scores: np.ndarray, ceiling: float | None) -> np.ndarray:
    """BM25 scores as shares of the query's ceiling, in [0, 1] (of the best score when the
    ceiling is unknown)."""
    scores = np.asarray(scores, np.float64)
    if len(scores) == 0:
        return scores
    top = ceiling if ceiling and ceiling > 0 else float(scores.max())
    if top <= 0:
        return np.zeros_like(scores)
    return np.clip(scores / top, 0.0, 1.0)


def dense_shares(cosines: np.ndarray) -> np.ndarray:
    """Cosines as shares in [0, 1] (a negative cosine means unrelated: 0)."""
    return np.clip(np.asarray(cosines, np.float64), 0.0, 1.0)


def blend(
    row: int,
    lex: float,
    den: float,
    chosen: QueryWeights,
    metadata_scores: Callable[[int], float] | None,
    meta_weight: float,
) -> tuple[float, float | None]:
    """A row's adaptive score from its two shares (and its metadata score, weighed in so
    the score stays in [0, 1]), with the metadata score it used."""
    total = chosen.lexical * lex + chosen.dense * den
    if metadata_scores is None:
        return total, None
    meta = metadata_scores(row)
    return (total + meta_weight * meta) / (1.0 + meta_weight), meta


def adaptive_fusion(
    legs: Mapping[str, Sequence[Candidate]],
    merged: dict[int, Candidate],
    ceiling: float | None,
    profile: Mapping[str, Any] | None,
    weights: Mapping[str, float] | None = None,
    metadata_scores: Callable[[int], float] | None = None,
) -> list[Candidate]:
    """score = w_lexical * lexical share + w_dense * dense share (+ w_metadata * metadata
    score, all divided by 1 + w_metadata so the score stays in [0, 1]); best first."""
    lexical = list(legs.get(LEXICAL, ()))
    dense = list(legs.get(DENSE, ()))
    rows = [c.row_id for c in lexical], [c.row_id for c in dense]
    chosen = query_weights(*rows, profile, weights, ceiling)
    meta_weight = float((weights or {}).get("metadata", 0.0) or 0.0)
    shares: dict[str, dict[int, float]] = {}
    floors: dict[str, float] = {}
    for leg, cands in ((LEXICAL, lexical), (DENSE, dense)):
        raw = np.array([c.score for c in cands], np.float64)
        values = lexical_shares(raw, ceiling) if leg == LEXICAL else dense_shares(raw)
        shares[leg] = dict(zip((c.row_id for c in cands), values.tolist()))
        floors[leg] = float(values.min()) if len(values) else 0.0
    out = []
    for row, cand in merged.items():
        lex = shares[LEXICAL].get(row, floors[LEXICAL])
        den = shares[DENSE].get(row, floors[DENSE])
        total, meta = blend(row, lex, den, chosen, metadata_scores, meta_weight)
        out.append(
            evolve(
                cand,
                score=total,
                fused_score=total,
                fused_by=ADAPTIVE,
                metadata_score=meta,
                lexical_share=lex,
                dense_share=den,
                fusion_detail=chosen,
            )
        )
    return sorted(out, key=lambda c: -c.score)


def alone(candidates: list[Candidate], leg: str, ceiling: float | None) -> list[Candidate]:
    """One leg's candidates as a search's answer: scored by the leg's share (the raw score
    stays in `lexical_score` / `dense_score`)."""
    raw = np.array([c.score for c in candidates], np.float64)
    values = lexical_shares(raw, ceiling) if leg == LEXICAL else dense_shares(raw)
    return [evolve(c, score=v, fused_score=v) for c, v in zip(candidates, values.tolist())]
