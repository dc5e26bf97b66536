"""Offline evaluation: BEIR collection loading and trec_eval-compatible ranking metrics."""

from __future__ import annotations

from .beir import BeirDataset, load_beir
from .metrics import evaluate_run, mrr_at_k, ndcg_at_k, recall_at_k

__all__ = ["BeirDataset", "evaluate_run", "load_beir", "mrr_at_k", "ndcg_at_k", "recall_at_k"]
