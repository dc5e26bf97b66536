"""A hybrid search's two legs, side by side when it pays: the lexical leg (with the query's
BM25 ceiling) on a worker (`ragloom.retrieval.beside`), the dense leg in the calling thread.

This way round the calling thread goes straight into the graph search, or waits on the
embedding service, both of which let go of the GIL while the worker wakes. The other way
round it held the GIL through the lexical leg's first steps while the worker woke, and the
dense leg started late (hybrid at 100k, ids only: 1.11-1.12 ms a query, against 1.04-1.05
this way; `python bench/qdrant_interleaved.py` measures it beside Qdrant)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ragloom.errors import EmbeddingError
from ragloom.retrieval.beside import Beside
from ragloom.timing import timed

Leg = Callable[[str, int], tuple[np.ndarray, np.ndarray]]  # (query, depth) -> (rows, scores)
Ceiling = Callable[[str], float | None]  # query text -> the most BM25 any chunk could score


def lexical_side(
    lexical: Leg, ceiling: Ceiling | None, query: str, depth: int
) -> tuple[Any, float | None]:
    """The lexical leg's answer and the query's BM25 ceiling (its terms' document frequencies)."""
    found = lexical(query, depth)
    with timed("lexical"):
        return found, ceiling(query) if ceiling is not None else None


def both_legs(
    lexical: Leg, dense: Leg, ceiling: Ceiling | None, query: str, depth: int, beside: bool
) -> tuple[Any, float | None, Any, EmbeddingError | None]:
    """(lexical answer, ceiling, dense answer, the embedding error that stopped the dense
    leg, if one did). With `beside` the lexical side runs on a worker meanwhile; else after
    the dense leg, in this thread."""
    with Beside(lexical_side, lexical, ceiling, query, depth, start=beside) as other:
        try:
            answer, failed = dense(query, depth), None
        except EmbeddingError as exc:
            answer, failed = None, exc
        found, top = other.result()
    return found, top, answer, failed
