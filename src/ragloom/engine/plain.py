"""The plain lexical query's route: a lexical search with nothing after its leg that could
reorder or drop what the leg ranks (no boosts, caps, MMR, minimum score, expansion,
rerank, hops, explanation or token counts) and no tie in its top k. Its answer is the leg's
top k as they stand, each scored by its share of the query's BM25 ceiling, so the leg's
rows go straight to their hits: no candidates of a pool, fusion, controls or flow on the
way (on the settled 100k index of bench/scale.py, a rare-term search's layers above its leg
and its hits' rows cost about half of its time). Anything else, ties included, takes the
general route (`ragloom.engine.steps`), which gives these queries the same hits and
rankings (tests/test_plain_route.py compares the two)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ragloom.engine.legs import Legs, lexical_side, plan_legs
from ragloom.retrieval.adaptive import lexical_shares
from ragloom.retrieval.pipeline import untied
from ragloom.timing import timed


@dataclass(frozen=True)
class PlainAnswer:
    """A plain query's top k, best first: chunk rows, their BM25 scores and their shares
    of the query's ceiling (the scores its hits carry)."""

    rows: list[int]
    bm25: np.ndarray
    shares: list[float]
    ceiling: float | None


def is_plain(legs: Legs) -> bool:
    """Whether the search's options (as applied) leave the lexical leg's top k as it is."""
    o = legs.options
    lexical = o.mode == "lexical" or (o.mode is None and legs.embedder is None)
    steps = o.reorders or o.uses_services or o.min_score is not None or o.preferences
    return lexical and not (steps or o.explain or o.with_tokens)


def plain_answer(legs: Legs, query: str) -> PlainAnswer | None:
    """The top k of a plain query, or None when the general route must rank it: options
    that are not plain (`is_plain`), a query that asks nothing, a tie within the top k or
    at its cut (by BM25 or by share), a shard missing."""
    options = legs.options
    if not is_plain(legs):
        return None
    plan = plan_legs(query, options, False)
    if plan.depth == 0:
        return None
    k = options.top_k
    (rows, scores), ceiling = lexical_side(legs, query, plan, options)
    with timed("fusion"):
        shares = lexical_shares(scores, ceiling).tolist()
        if not (untied(scores.tolist(), k) and untied(shares, k)):
            return None
        if legs.reader.missing_shards():
            return None
        return PlainAnswer(rows[:k].tolist(), scores[:k], shares[:k], ceiling)
