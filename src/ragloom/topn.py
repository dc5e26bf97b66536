"""Top-n selection shared by the lexical and dense legs."""

from __future__ import annotations

import numpy as np


def best_first(candidates: np.ndarray, scores: np.ndarray, n: int) -> np.ndarray:
    """The `n` best of `candidates` (indexes into `scores`), best first; ties: lower index first.

    A partial sort keeps this linear in the candidates; only the survivors are fully sorted.
    """
    if len(candidates) > n:
        part = np.argpartition(-scores[candidates], n - 1)[:n]
        threshold = scores[candidates[part]].min()
        candidates = candidates[scores[candidates] >= threshold]
    order = np.lexsort((candidates, -scores[candidates]))[:n]
    return candidates[order]
