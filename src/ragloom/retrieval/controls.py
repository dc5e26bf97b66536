"""Post-fusion controls as pure functions: boosts, the minimum score, per-key caps and MMR
diversity.

Each takes candidates (best first) and their rows' metadata (row id -> metadata), returns
candidates best first, and records what it did on each candidate so `explain` can show it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ragloom.errors import InputError, InvalidRequest
from ragloom.filters import Predicate, compile_filter
from ragloom.retrieval.pipeline import Candidate

MetadataOf = Mapping[int, Mapping[str, Any]]  # row id -> its chunk's metadata


@dataclass(frozen=True)
class BoostRule:
    """Multiply a hit's score by `factor` when its metadata matches `when` (a filter)."""

    when: Mapping[str, Any]
    factor: float
    label: str
    predicate: Predicate

    @classmethod
    def parse(cls, spec: Any) -> BoostRule:
        """From `{"when": {...filter...}, "factor": 1.5, "label"?: "..."}`."""
        if not isinstance(spec, Mapping) or "when" not in spec or "factor" not in spec:
            raise InvalidRequest(
                f"a boost must be an object with 'when' and 'factor', got {spec!r}",
                'example: {"when": {"chapter_num": 9}, "factor": 1.5}',
            )
        unknown = set(spec) - {"when", "factor", "label"}
        if unknown:
            raise InvalidRequest(f"unknown boost field(s): {', '.join(sorted(unknown))}")
        factor = spec["factor"]
        if isinstance(factor, bool) or not isinstance(factor, (int, float)) or factor <= 0:
            raise InvalidRequest(f"boost factor must be a positive number, got {factor!r}")
        label = spec.get("label") or ", ".join(f"{k}={v}" for k, v in spec["when"].items())
        if not isinstance(label, str):
            raise InvalidRequest("boost label must be a string")
        return cls(spec["when"], float(factor), label, compile_filter(spec["when"]))


def apply_boosts(
    candidates: Sequence[Candidate], rules: Sequence[BoostRule], metadata: MetadataOf
) -> list[Candidate]:
    """Multiply each score by the factors of the rules its metadata matches; re-sort stably."""
    if not rules:
        return list(candidates)
    out = []
    for cand in candidates:
        fields = metadata.get(cand.row_id, {})
        applied = tuple((r.label, r.factor) for r in rules if r.predicate(fields))
        factor = float(np.prod([f for _, f in applied])) if applied else 1.0
        out.append(replace(cand, score=cand.score * factor, boosts=applied))
    return sorted(out, key=lambda c: -c.score)


MISSING_POLICIES = ("keep", "group")


def apply_min_score(candidates: Sequence[Candidate], min_score: float | None) -> list[Candidate]:
    """Drop candidates whose final score is below `min_score`."""
    if min_score is None:
        return list(candidates)
    return [c for c in candidates if c.score >= min_score]


def cap_per_key(
    candidates: Sequence[Candidate],
    caps: Mapping[str, int],
    metadata: MetadataOf,
    missing: str = "keep",
) -> list[Candidate]:
    """Keep at most `caps[key]` candidates per value of each metadata key (best first).

    A candidate without the key (absent or null) is not limited by that key's cap
    (`missing="keep"`), or all such candidates share one group with the same cap
    (`missing="group"`).
    """
    for key, limit in caps.items():
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise InputError(f"cap for {key!r} must be a positive integer, got {limit!r}")
    if missing not in MISSING_POLICIES:
        raise InputError(
            f"unknown policy for hits without the key: {missing!r}",
            f"use one of {', '.join(MISSING_POLICIES)}",
        )
    seen: dict[tuple[str, str], int] = {}
    kept = []
    for cand in candidates:
        fields = metadata.get(cand.row_id, {})
        values = {
            key: repr(fields.get(key))
            for key in caps
            if missing == "group" or fields.get(key) is not None
        }
        if any(seen.get((k, v), 0) >= caps[k] for k, v in values.items()):
            continue
        for k, v in values.items():
            seen[(k, v)] = seen.get((k, v), 0) + 1
        notes = tuple(
            f"{k}={fields.get(k)!r}: #{seen[(k, v)]} of {caps[k]}" for k, v in values.items()
        )
        kept.append(replace(cand, diversity=cand.diversity + notes))
    return kept


def maximal_marginal_relevance(
    candidates: Sequence[Candidate],
    vectors: np.ndarray,
    k: int,
    lambda_: float = 0.7,
) -> list[Candidate]:
    """Pick `k` candidates trading relevance (min-max-scaled score) against similarity to
    those already picked: argmax lambda*rel - (1-lambda)*max_cos(picked). `vectors` are the
    candidates' unit vectors, in order."""
    if not 0.0 <= lambda_ <= 1.0:
        raise InputError(f"MMR lambda must lie between 0 and 1, got {lambda_}")
    if not candidates:
        return []
    scores = np.array([c.score for c in candidates], np.float64)
    span = scores.max() - scores.min()
    relevance = (scores - scores.min()) / span if span > 0 else np.ones_like(scores)
    similarity = vectors @ vectors.T
    picked: list[int] = []
    redundancy = np.full(len(candidates), -np.inf)
    remaining = list(range(len(candidates)))
    while remaining and len(picked) < k:
        penalty = np.where(np.isfinite(redundancy), redundancy, 0.0)
        mmr = lambda_ * relevance - (1 - lambda_) * penalty
        best = max(remaining, key=lambda i: (mmr[i], -i))
        picked.append(best)
        remaining.remove(best)
        redundancy = np.maximum(redundancy, similarity[best])
    out = []
    for order, i in enumerate(picked, start=1):
        note = f"MMR pick #{order} (lambda {lambda_}, max similarity to earlier picks "
        note += f"{max((similarity[i][j] for j in picked[: order - 1]), default=0.0):.3f})"
        out.append(replace(candidates[i], diversity=candidates[i].diversity + (note,)))
    return out
