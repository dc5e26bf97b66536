"""Ranking metrics (nDCG@k, Recall@k, MRR@k) matching trec_eval's conventions.

Inputs are plain mappings so the module needs nothing from the index:

- ``qrels``: query id -> doc id -> graded relevance (0 = judged not relevant),
- ``run``: query id -> doc ids ranked best first, without duplicates.

A document is *relevant* when its grade is > 0; unjudged documents count as not relevant.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ..errors import InputError

__all__ = ["evaluate_run", "judged_queries", "mrr_at_k", "ndcg_at_k", "per_query", "recall_at_k"]


def _top(ranked: Sequence[str], k: int) -> Sequence[str]:
    """Return the first k doc ids, rejecting a bad cut-off or a repeated doc id."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InputError(f"cut-off k must be a positive integer, got {k!r}")
    top = ranked[:k]
    if len(set(top)) != len(top):
        raise InputError("ranked list repeats a document id", "each document may appear once")
    return top


def _discounts(n: int) -> np.ndarray:
    """Position discounts 1 / log2(rank + 1) for ranks 1..n."""
    return 1.0 / np.log2(np.arange(2, n + 2, dtype=np.float64))


def ndcg_at_k(ranked: Sequence[str], judgments: Mapping[str, int], k: int) -> float:
    """nDCG@k with linear gains and an ideal ranking over all judged docs (trec_eval ndcg_cut)."""
    top = _top(ranked, k)
    ideal = sorted((g for g in judgments.values() if g > 0), reverse=True)[:k]
    if not ideal:
        return 0.0
    gains = np.array([max(judgments.get(doc, 0), 0) for doc in top], dtype=np.float64)
    dcg = float(gains @ _discounts(len(gains)))
    idcg = float(np.array(ideal, dtype=np.float64) @ _discounts(len(ideal)))
    return dcg / idcg


def recall_at_k(ranked: Sequence[str], judgments: Mapping[str, int], k: int) -> float:
    """Share of the relevant docs found in the top k (trec_eval recall_k); 0 if none exist."""
    top = _top(ranked, k)
    relevant = {doc for doc, grade in judgments.items() if grade > 0}
    if not relevant:
        return 0.0
    return sum(doc in relevant for doc in top) / len(relevant)


def mrr_at_k(ranked: Sequence[str], judgments: Mapping[str, int], k: int) -> float:
    """Reciprocal rank of the first relevant doc within the top k, else 0 (trec_eval recip_rank)."""
    for rank, doc in enumerate(_top(ranked, k), start=1):
        if judgments.get(doc, 0) > 0:
            return 1.0 / rank
    return 0.0


def evaluate_run(
    run: Mapping[str, Sequence[str]],
    qrels: Mapping[str, Mapping[str, int]],
    k_ndcg: int = 10,
    k_recall: int = 100,
    k_mrr: int = 10,
) -> dict[str, float]:
    """Mean nDCG, Recall and MRR over the judged queries, so runs are comparable across systems.

    The mean is taken over every query in ``qrels`` with at least one relevant doc (grade > 0).
    Such a query missing from ``run`` scores 0 on every metric; this differs from
    pytrec_eval/trec_eval, which skip queries absent from the run, and stops a system from
    looking better by answering fewer queries. Queries in ``run`` without relevant docs in
    ``qrels`` are ignored. Returns keys ``ndcg@{k_ndcg}``, ``recall@{k_recall}``,
    ``mrr@{k_mrr}`` and ``queries`` (the number of queries averaged over).
    """
    scores = per_query(run, qrels, (k_ndcg, k_recall, k_mrr))
    means = {
        name: float(np.mean([q[name] for q in scores.values()]))
        for name in _names(k_ndcg, k_recall, k_mrr)
    }
    return {**means, "queries": len(scores)}


def _names(k_ndcg: int, k_recall: int, k_mrr: int) -> tuple[str, str, str]:
    return f"ndcg@{k_ndcg}", f"recall@{k_recall}", f"mrr@{k_mrr}"


def judged_queries(qrels: Mapping[str, Mapping[str, int]]) -> list[str]:
    """The query ids with at least one relevant document (the ones metrics average over)."""
    judged = [qid for qid, judgments in qrels.items() if any(g > 0 for g in judgments.values())]
    if not judged:
        raise InputError("no query in the qrels has a relevant document (grade > 0)")
    return judged


def per_query(
    run: Mapping[str, Sequence[str]],
    qrels: Mapping[str, Mapping[str, int]],
    cutoffs: tuple[int, int, int] = (10, 100, 10),
) -> dict[str, dict[str, float]]:
    """Each judged query's nDCG, Recall and MRR at `cutoffs` (k of each, in that order), as
    `evaluate_run` averages them."""
    k_ndcg, k_recall, k_mrr = cutoffs
    names = _names(k_ndcg, k_recall, k_mrr)
    out = {}
    for qid in judged_queries(qrels):
        ranked = run.get(qid, [])
        judgments = qrels[qid]
        values = (
            ndcg_at_k(ranked, judgments, k_ndcg),
            recall_at_k(ranked, judgments, k_recall),
            mrr_at_k(ranked, judgments, k_mrr),
        )
        out[qid] = dict(zip(names, values))
    return out
