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
from functools import partial
from typing import Any

import numpy as np

from ragloom.retrieval.pipeline import (
    CANDIDATE_DEFAULTS,
    DENSE,
    LEXICAL,
    Candidate,
    candidate_of,
    head_positions,
    tie_rank,
    tie_ranks,
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


def one_leg(leg: str, ranked: Ranked, ceiling: float | None) -> list[Candidate]:
    """One leg's answer as a search's ranking: each row scored by the leg's share (BM25 over
    the query's `ceiling`, or the cosine), its raw score kept in `lexical_score` /
    `dense_score`; each candidate built once from a copy of one template of its fields
    (0.5 us a candidate, against 0.85 merging dicts)."""
    rows, scores = ranked[0].tolist(), ranked[1].tolist()
    raw = np.array(scores, np.float64)
    values = lexical_shares(raw, ceiling) if leg == LEXICAL else dense_shares(raw)
    rank_of, score_of = (
        ("lexical_rank", "lexical_score") if leg == LEXICAL else ("dense_rank", "dense_score")
    )
    template = {**CANDIDATE_DEFAULTS, "match": LEXICAL if leg == LEXICAL else DENSE}
    out = []
    for row, score, rank, value in zip(rows, scores, tie_ranks(scores), values.tolist()):
        fields = template.copy()
        fields["row_id"] = row
        fields["score"] = value
        fields[rank_of] = rank
        fields[score_of] = score
        fields["fused_score"] = value
        out.append(candidate_of(fields))
    return out


def fuse_adaptive(
    lexical: Ranked,
    dense: Ranked,
    chosen: QueryWeights,
    preferences: Mapping[int, float] | None = None,
    metadata_weight: float = 0.0,
    floor: float | None = None,
    keep: int | None = None,
) -> tuple[list[Candidate], int]:
    """score = w_lexical * lexical share + w_dense * dense share (+ w_metadata * the row's
    `preferences` score, all divided by 1 + w_metadata so the score stays in [0, 1]), best
    first, stable among equal scores (lexical rows first, then the dense rows no lexical row
    holds), column by column: the merged rows, their shares (a leg's lowest share where it
    did not find a row), the blend and the order, then each candidate built once in that
    order from one dict. The dense-only rows whose cosine is below `floor` are left out (how
    many: the second value), and with `keep` only those a top `keep` can hold are built,
    ties at the cut included (`pipeline.head_positions`): a hybrid query fuses about 80
    rows for a top 10, and building them was most of fusion's time. The legs hold each row
    once (`fusion.fuse` sees to it)."""
    lex_rows, den_rows = lexical[0].tolist(), dense[0].tolist()
    lex_scores, den_scores = lexical[1].tolist(), dense[1].tolist()
    lex_values = lexical_shares(np.array(lex_scores, np.float64), chosen.ceiling)
    den_values = dense_shares(np.array(den_scores, np.float64))
    lex_floor = float(lex_values.min()) if len(lex_values) else 0.0
    den_floor = float(den_values.min()) if len(den_values) else 0.0
    den_at = dict(zip(den_rows, range(len(den_rows))))
    den_entry = [den_at.pop(row, -1) for row in lex_rows]  # each lexical row's dense entry
    den_entry += den_at.values()  # then the dense entries no lexical row holds, in order
    lexical_count = len(lex_rows)
    lex_share_of = lex_values.tolist() + [lex_floor] * (len(den_entry) - lexical_count)
    dense_of = den_values.tolist()
    den_share_of = [den_floor if j < 0 else dense_of[j] for j in den_entry]
    weight_lexical, weight_dense = chosen.lexical, chosen.dense
    totals_of = [
        weight_lexical * lex + weight_dense * den for lex, den in zip(lex_share_of, den_share_of)
    ]
    meta_of = None
    if preferences is not None:  # the metadata score weighed in, the result kept in [0, 1]
        meta_of = [preferences[row] for row in lex_rows + [den_rows[j] for j in den_at.values()]]
        totals_of = [
            (total + metadata_weight * meta) / (1.0 + metadata_weight)
            for total, meta in zip(totals_of, meta_of)
        ]
    order = _best_first(totals_of)
    weak = [False] * lexical_count + [
        floor is not None and not den_scores[j] >= floor for j in den_entry[lexical_count:]
    ]
    order, dropped = head_positions(order, totals_of, weak, keep)
    lex_rank, den_rank = _rank_of(lex_scores, keep), _rank_of(den_scores, keep)
    template = {**CANDIDATE_DEFAULTS, "fused_by": ADAPTIVE, "fusion_detail": chosen}
    out = []
    for m in order:  # a dict copied and filled beats a dict display by a third here
        values = template.copy()
        j = den_entry[m]
        if m < lexical_count:
            row, match = lex_rows[m], LEXICAL
            values["lexical_rank"] = lex_rank(m)
            values["lexical_score"] = lex_scores[m]
            if j >= 0:
                match = "both"
                values["dense_rank"] = den_rank(j)
                values["dense_score"] = den_scores[j]
        else:
            row, match = den_rows[j], DENSE
            values["dense_rank"] = den_rank(j)
            values["dense_score"] = den_scores[j]
        total = totals_of[m]
        values["fused_score"] = total
        values["lexical_share"] = lex_share_of[m]
        values["dense_share"] = den_share_of[m]
        if meta_of is not None:
            values["metadata_score"] = meta_of[m]
        values["row_id"] = row  # the last three in `make_candidate`'s order of keys
        values["score"] = total
        values["match"] = match
        out.append(candidate_of(values))
    return out, dropped


def _rank_of(scores: list[float], keep: int | None) -> Callable[[int], int]:
    """position -> its tie rank in a leg: every leg's ranks at once when every row is built
    (`keep` None), else each one alone (a top k built from a fused pool needs a few)."""
    return tie_ranks(scores).__getitem__ if keep is None else partial(tie_rank, scores)


def _best_first(totals: list[float]) -> list[int]:
    """Positions by total, best first, stable as sorting by -total: equal totals keep the
    merge order (NaN has no order: then sorted by the negated totals, where NaN falls)."""
    total = sum(totals)
    if total == total:
        return sorted(range(len(totals)), key=totals.__getitem__, reverse=True)
    return sorted(range(len(totals)), key=lambda i: -totals[i])
