"""Offline query expansion: RM3 pseudo-relevance feedback on the lexical leg (no LLM).

The query's best `fb_docs` chunks are taken as relevant; each votes for its terms in
proportion to the term's share of the chunk and the chunk's BM25 score (relevance model
RM1). The `fb_terms` strongest terms, leaving out terms found in more than `max_df_ratio`
of all chunks, are mixed with the original query: weight `original_weight` for the query,
the rest for the feedback terms (RM3, as Anserini does it), and BM25 runs again with those
term weights.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ragloom.errors import InputError


@dataclass(frozen=True)
class PRFParams:
    """RM3 settings (Anserini's defaults)."""

    fb_docs: int = 10
    fb_terms: int = 10
    original_weight: float = 0.5
    max_df_ratio: float = 0.1

    def __post_init__(self) -> None:
        for name in ("fb_docs", "fb_terms"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InputError(f"prf {name} must be a positive integer, got {value!r}")
        if not 0.0 <= self.original_weight <= 1.0:
            raise InputError("prf original_weight must lie between 0 and 1")
        if not 0.0 < self.max_df_ratio <= 1.0:
            raise InputError("prf max_df_ratio must lie in (0, 1]")


def query_vector(terms: Sequence[str]) -> dict[str, float]:
    """The query as term -> share of its terms (repeated terms count more)."""
    out: dict[str, float] = {}
    for term in terms:
        out[term] = out.get(term, 0.0) + 1.0 / len(terms)
    return out


def relevance_model(
    feedback: Sequence[tuple[float, Mapping[str, float]]],
    df: Mapping[str, int],
    n_docs: int,
    params: PRFParams,
) -> dict[str, float]:
    """RM1 over feedback chunks given as (score, term -> frequency): term -> sum of
    tf / length * score, the best `fb_terms`, scaled to sum to 1."""
    weights: dict[str, float] = {}
    limit = params.max_df_ratio * n_docs
    for score, counts in feedback:
        length = float(sum(counts.values()))
        if length <= 0 or score <= 0:
            continue
        for term, tf in counts.items():
            if 0 < df.get(term, 0) <= limit:
                weights[term] = weights.get(term, 0.0) + tf / length * score
    best = sorted(weights.items(), key=lambda item: (-item[1], item[0]))[: params.fb_terms]
    total = sum(w for _, w in best)
    return {term: w / total for term, w in best} if total > 0 else {}


def rm3_query(
    terms: Sequence[str],
    feedback: Sequence[tuple[float, Mapping[str, float]]],
    df: Mapping[str, int],
    n_docs: int,
    params: PRFParams,
) -> dict[str, float]:
    """The expanded query: original_weight * query + (1 - original_weight) * feedback terms."""
    original = query_vector(terms)
    model = relevance_model(feedback, df, n_docs, params)
    if not model:
        return original
    mixed = {t: params.original_weight * w for t, w in original.items()}
    for term, weight in model.items():
        mixed[term] = mixed.get(term, 0.0) + (1.0 - params.original_weight) * weight
    return mixed
