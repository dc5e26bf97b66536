"""Adaptive fusion on the hot path: the same candidates `ragloom.retrieval.adaptive` gives,
built once each straight from the legs' arrays (row ids and scores, best first) instead of
from leg candidates, and only as many as the top k can hold when nothing reorders after."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

import numpy as np

from ragloom.retrieval.adaptive import (
    ADAPTIVE,
    QueryWeights,
    Ranked,
    blend,
    dense_shares,
    lexical_shares,
    query_weights,
)
from ragloom.retrieval.pipeline import (
    _DEFAULTS,
    DENSE,
    LEXICAL,
    Candidate,
    _candidate,
    candidate_of,
    head_positions,
    tie_rank,
    tie_ranks,
)


def alone_ranked(leg: str, ranked: Ranked, ceiling: float | None) -> list[Candidate]:
    """`alone(leg_candidates(leg, *ranked), leg, ceiling)`, each candidate built once (from a
    copy of one template of its fields: 0.5 us a candidate, against 0.85 merging dicts)."""
    rows, scores = ranked[0].tolist(), ranked[1].tolist()
    raw = np.array(scores, np.float64)
    values = lexical_shares(raw, ceiling) if leg == LEXICAL else dense_shares(raw)
    rank_of, score_of = (
        ("lexical_rank", "lexical_score") if leg == LEXICAL else ("dense_rank", "dense_score")
    )
    template = {**_DEFAULTS, "match": LEXICAL if leg == LEXICAL else DENSE}
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


def fuse_ranked(
    lexical: Ranked,
    dense: Ranked,
    ceiling: float | None,
    profile: Mapping[str, Any] | None,
    weights: Mapping[str, float] | None = None,
    metadata_scores: Callable[[int], float] | None = None,
) -> list[Candidate]:
    """`adaptive_fusion` of the two legs' answers as the hot path runs it: the same
    candidates in the same order (`fusion._merge` of each leg's `leg_candidates`, then
    `adaptive_fusion`), each built once from plain values instead of three times (a leg
    candidate, a merged one, a fused one: about 300 a hybrid query).

    A plain query (no metadata preferences, no row twice in a leg) merges, blends and
    orders its rows as arrays (`fuse_distinct`); the rest take the general path."""
    lex_rows, den_rows = lexical[0].tolist(), dense[0].tolist()
    chosen = query_weights(lex_rows, den_rows, profile, weights, ceiling)
    if metadata_scores is None:
        fused = fuse_distinct(lexical, dense, lex_rows, den_rows, chosen)
        if fused is not None:
            return fused[0]
    meta_weight = float((weights or {}).get("metadata", 0.0) or 0.0)
    lex_scores, den_scores = lexical[1].tolist(), dense[1].tolist()
    lex_values = lexical_shares(np.array(lex_scores, np.float64), ceiling)
    den_values = dense_shares(np.array(den_scores, np.float64))
    lex_floor = float(lex_values.min()) if len(lex_values) else 0.0
    den_floor = float(den_values.min()) if len(den_values) else 0.0
    lex_share = dict(zip(lex_rows, lex_values.tolist()))
    den_share = dict(zip(den_rows, den_values.tolist()))
    merged: dict[int, dict[str, Any]] = {}
    for row, score, rank in zip(lex_rows, lex_scores, tie_ranks(lex_scores)):
        if row not in merged:  # a row twice in one leg: its first (best) entry, as _merge
            merged[row] = {
                "row_id": row,
                "score": score,
                "match": LEXICAL,
                "lexical_rank": rank,
                "lexical_score": score,
            }
    for row, score, rank in zip(den_rows, den_scores, tie_ranks(den_scores)):
        seen = merged.get(row)
        if seen is None:
            merged[row] = {
                "row_id": row,
                "score": score,
                "match": DENSE,
                "dense_rank": rank,
                "dense_score": score,
            }
        else:
            seen.update(match="both", dense_rank=rank, dense_score=score)
    out = []
    for row, values in merged.items():
        lex = lex_share.get(row, lex_floor)
        den = den_share.get(row, den_floor)
        total, meta = blend(row, lex, den, chosen, metadata_scores, meta_weight)
        values.update(
            score=total,
            fused_score=total,
            fused_by=ADAPTIVE,
            metadata_score=meta,
            lexical_share=lex,
            dense_share=den,
            fusion_detail=chosen,
        )
        out.append(_candidate(values))
    return sorted(out, key=lambda c: -c.score)


def fuse_distinct(
    lexical: Ranked,
    dense: Ranked,
    lex_rows: list[int],
    den_rows: list[int],
    chosen: QueryWeights,
    floor: float | None = None,
    keep: int | None = None,
) -> tuple[list[Candidate], int] | None:
    """`fuse_ranked` without metadata preferences, column by column: the merged rows (the
    lexical ones, then the dense ones not among them), their shares (a leg's floor where it
    did not find a row), the blend and a stable best-first order, then each candidate built
    in that order from one dict; with the dense-only rows whose cosine is below `floor`
    left out (how many: the second value), and only those a top `keep` can hold built
    (`pipeline.head_positions`). None when a leg holds a row twice (the general path keeps
    `_merge`'s rules for that)."""
    den_at = dict(zip(den_rows, range(len(den_rows))))
    if len(den_at) < len(den_rows) or len(set(lex_rows)) < len(lex_rows):
        return None
    lex_scores, den_scores = lexical[1].tolist(), dense[1].tolist()
    lex_values = lexical_shares(np.array(lex_scores, np.float64), chosen.ceiling)
    den_values = dense_shares(np.array(den_scores, np.float64))
    lex_floor = float(lex_values.min()) if len(lex_values) else 0.0
    den_floor = float(den_values.min()) if len(den_values) else 0.0
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
    total = sum(totals_of)
    if total == total:  # stable, as sorting by -score: equal totals keep the merge order
        order = sorted(range(len(totals_of)), key=totals_of.__getitem__, reverse=True)
    else:  # NaN has no order: sort exactly as adaptive_fusion does
        order = sorted(range(len(totals_of)), key=lambda i: -totals_of[i])
    weak = [False] * lexical_count + [
        floor is not None and not den_scores[j] >= floor for j in den_entry[lexical_count:]
    ]
    order, dropped = head_positions(order, totals_of, weak, keep)
    if keep is None:  # every row built: each leg's ranks at once
        lex_rank, den_rank = tie_ranks(lexical[1]).__getitem__, tie_ranks(dense[1]).__getitem__
    else:  # a few rows: each one's rank alone
        lex_rank, den_rank = partial(tie_rank, lex_scores), partial(tie_rank, den_scores)
    template = {**_DEFAULTS, "fused_by": ADAPTIVE, "fusion_detail": chosen}
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
        values["row_id"] = row  # the last three in `_candidate`'s order of keys
        values["score"] = total
        values["match"] = match
        out.append(candidate_of(values))
    return out, dropped
