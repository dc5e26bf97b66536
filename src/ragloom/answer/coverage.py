"""Do the passages cover the question? The relevance floor's decision, from the hits alone
(no model): below the floor, `ask` says the material does not cover the question without
calling the model.

Each signal is a pure function of one search's hits (their scores, each leg's rank and score,
and with `explain` the fusion's shares); bench/abstention.py measures how well each tells a
covered question from one whose documents are gone, and picks the floor on a train split.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ragloom.types import Hit


def _scores(hits: Sequence[Hit]) -> list[float]:
    return [h.score for h in hits]


def top_score(hits: Sequence[Hit]) -> float:
    return hits[0].score if hits else 0.0


def top_cosine(hits: Sequence[Hit]) -> float:
    return max((h.dense_score for h in hits if h.dense_score is not None), default=0.0)


def top_bm25(hits: Sequence[Hit]) -> float:
    return max((h.lexical_score for h in hits if h.lexical_score is not None), default=0.0)


def score_gap(hits: Sequence[Hit]) -> float:
    """The top score's lead over the mean of the others."""
    scores = _scores(hits)
    if len(scores) < 2:
        return scores[0] if scores else 0.0
    return scores[0] - sum(scores[1:]) / (len(scores) - 1)


def _support(hits: Sequence[Hit], own: str, other: str) -> float:
    """How high the other leg ranks this leg's first three hits (as adaptive fusion weighs
    the legs: `ragloom.retrieval.adaptive.support`), read from the hits' leg ranks; a hit
    the other leg did not find counts 0."""
    head = sorted(
        (h for h in hits if getattr(h, own) is not None and getattr(h, own) <= SUPPORT_DEPTH),
        key=lambda h: getattr(h, own),
    )
    if not head:
        return 0.0
    got = 0.0
    for h in head:
        rank = getattr(h, other)
        got += _DISCOUNT[getattr(h, own) - 1] * (1.0 / math.log2(rank + 1) if rank else 0.0)
    return got / sum(_DISCOUNT)


SUPPORT_DEPTH = 3
_DISCOUNT = [1.0 / math.log2(i + 1) for i in range(1, SUPPORT_DEPTH + 1)]


def leg_agreement(hits: Sequence[Hit]) -> float:
    """How far the two legs agree on the best hits, 0 to 1 (0 with one leg only)."""
    return (
        _support(hits, "lexical_rank", "dense_rank") + _support(hits, "dense_rank", "lexical_rank")
    ) / 2


AGREEMENT_SHARE = 0.4  # chosen on SciFact train (bench/abstention.py)


def relevance(hits: Sequence[Hit]) -> float:
    """The shipped signal: the top hit's score (0-1 in hybrid, lexical and dense searches
    alike), blended with the legs' agreement when both legs ran."""
    if not hits:
        return 0.0
    both = any(h.lexical_rank is not None for h in hits) and any(
        h.dense_rank is not None for h in hits
    )
    if not both:
        return top_score(hits)
    return (1 - AGREEMENT_SHARE) * top_score(hits) + AGREEMENT_SHARE * leg_agreement(hits)


Signal = Callable[[Sequence[Hit]], float]
SIGNALS: dict[str, Signal] = {
    "top fused score": top_score,
    "top cosine": top_cosine,
    "top BM25": top_bm25,
    "score gap": score_gap,
    "leg agreement": leg_agreement,
    "relevance": relevance,
}
DEFAULT_SIGNAL = "relevance"
# The floor per search mode (the relevance of a hybrid search blends two legs; a search of
# one leg has that leg's share), chosen on SciFact's train split by bench/abstention.py as
# the highest that keeps 90% of the covered questions: a floor that answers without the
# model should seldom silence a question the passages cover (the model judges the rest and
# may say so itself). On the test split: precision 0.47, recall 0.93 (hybrid); it stops
# 92% of another collection's questions (Cranfield's, off-topic there). docs/answers.md.
DEFAULT_FLOORS = {"hybrid": 0.34, "lexical": 0.21, "dense": 0.51}


def signals(hits: Sequence[Hit]) -> dict[str, float]:
    """Every signal of one search's hits."""
    return {name: float(signal(hits)) for name, signal in SIGNALS.items()}


@dataclass(frozen=True)
class Coverage:
    """The floor's decision: the signal, the floor, and whether the passages cover."""

    covered: bool
    relevance: float
    floor: float

    def to_dict(self) -> dict[str, Any]:
        return {"covered": self.covered, "relevance": self.relevance, "floor": self.floor}


def decide(hits: Sequence[Hit], floor: float | None = None, mode: str = "hybrid") -> Coverage:
    """Covered when there is a hit and the shipped signal reaches the floor (`floor` None:
    the one measured for the search's mode)."""
    floor = DEFAULT_FLOORS.get(mode, DEFAULT_FLOORS["hybrid"]) if floor is None else floor
    value = float(relevance(hits))
    return Coverage(bool(hits) and value >= floor, round(value, 6), floor)
