"""The reference fusion, written plainly over candidate lists: the oracle that the one
fusion of the search path (`ragloom.retrieval.fusion.fuse`, which builds each adaptive
candidate once, column by column, and only those a top k can hold) is checked against.

Each leg's answer becomes candidates (`leg_candidates`), the legs merge into one candidate
per row (`fusion.merge_legs`, as rrf and weighted fusion merge them), and adaptive fusion
scores every merged candidate by the weighted mean of its legs' shares (`adaptive`); a leg
alone scores each hit by its share (`alone`). A row a leg holds twice counts once, at its
first entry, as in the search path.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ragloom.retrieval.adaptive import (
    ADAPTIVE,
    Ranked,
    dense_shares,
    lexical_shares,
    query_weights,
)
from ragloom.retrieval.fusion import (
    check_weights,
    merge_legs,
    reciprocal_rank_fusion,
    weighted_fusion,
)
from ragloom.retrieval.pipeline import (
    DENSE,
    LEXICAL,
    Candidate,
    drop_weak_dense_only,
    evolve,
    head_of,
    leg_candidates,
    ordered,
)


def first_entries(ranked: Ranked) -> Ranked:
    """A leg's answer with each row once, at its first entry."""
    seen: set[int] = set()
    keep = []
    for i, row in enumerate(ranked[0].tolist()):
        if row not in seen:
            seen.add(row)
            keep.append(i)
    index = np.array(keep, np.int64)
    return ranked[0][index], ranked[1][index]


def adaptive(
    legs: Mapping[str, Sequence[Candidate]],
    ceiling: float | None,
    profile: Mapping[str, Any] | None,
    weights: Mapping[str, float] | None = None,
    preferences: Mapping[int, float] | None = None,
) -> list[Candidate]:
    """score = w_lexical * lexical share + w_dense * dense share (+ w_metadata * metadata
    score, all divided by 1 + w_metadata); a row missing from a leg counts at that leg's
    lowest share; best first, stable."""
    lexical, dense = list(legs.get(LEXICAL, ())), list(legs.get(DENSE, ()))
    chosen = query_weights(
        [c.row_id for c in lexical], [c.row_id for c in dense], profile, weights, ceiling
    )
    meta_weight = float((weights or {}).get("metadata", 0.0) or 0.0)
    shares: dict[str, dict[int, float]] = {}
    floors: dict[str, float] = {}
    for leg, cands in ((LEXICAL, lexical), (DENSE, dense)):
        raw = np.array([c.score for c in cands], np.float64)
        values = lexical_shares(raw, ceiling) if leg == LEXICAL else dense_shares(raw)
        shares[leg] = dict(zip((c.row_id for c in cands), values.tolist()))
        floors[leg] = float(values.min()) if len(values) else 0.0
    out = []
    for row, cand in merge_legs(legs).items():
        lex = shares[LEXICAL].get(row, floors[LEXICAL])
        den = shares[DENSE].get(row, floors[DENSE])
        total, meta = chosen.lexical * lex + chosen.dense * den, None
        if preferences is not None:
            meta = preferences[row]
            total = (total + meta_weight * meta) / (1.0 + meta_weight)
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
    """One leg's candidates as a search's answer, each scored by the leg's share."""
    raw = np.array([c.score for c in candidates], np.float64)
    values = lexical_shares(raw, ceiling) if leg == LEXICAL else dense_shares(raw)
    return [evolve(c, score=v, fused_score=v) for c, v in zip(candidates, values.tolist())]


def reference_fuse(
    lexical: Ranked | None,
    dense: Ranked | None,
    method: str = ADAPTIVE,
    rrf_k: float = 60.0,
    weights: Mapping[str, float] | None = None,
    normalization: str = "zscore",
    ceiling: float | None = None,
    profile: Mapping[str, Any] | None = None,
    preferences: Mapping[int, float] | None = None,
    floor: float | None = None,
) -> tuple[list[Candidate], int]:
    """What `fusion.fuse` gives without `keep`: every fused candidate, the weak dense-only
    ones dropped, and how many were."""
    if dense is None:
        return alone(leg_candidates(LEXICAL, *lexical), LEXICAL, ceiling), 0  # type: ignore[misc]
    if lexical is None:
        return alone(leg_candidates(DENSE, *dense), DENSE, None), 0
    legs = {
        LEXICAL: leg_candidates(LEXICAL, *first_entries(lexical)),
        DENSE: leg_candidates(DENSE, *first_entries(dense)),
    }
    if method == ADAPTIVE:
        check_weights(weights or {})
        fused = adaptive(legs, ceiling, profile, weights, preferences)
    elif method == "rrf":
        fused = reciprocal_rank_fusion(legs, rrf_k, weights)
    else:
        fused = weighted_fusion(legs, weights, normalization, preferences)
    if floor is None:
        return fused, 0
    kept = drop_weak_dense_only(fused, floor)
    return kept, len(fused) - len(kept)


def top_k(
    candidates: Sequence[Candidate],
    k: int,
    keys_of: Callable[[list[int]], Mapping[int, tuple[Any, ...]]] | None = None,
) -> list[Candidate]:
    """The top k as a search takes it: `head_of`, then `ordered` with the stable keys of the
    rows tied in the head (`keys_of(rows)`; without it, earlier candidates win)."""
    head = head_of(candidates, k)
    keys = None if keys_of is None else keys_of(head.tied) if head.tied else {}
    return ordered(head, keys)
