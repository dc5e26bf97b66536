"""The retrieval pipeline: legs produce candidates, small stages refine them into hits."""

from ragloom.retrieval.fusion import fuse, reciprocal_rank_fusion, weighted_fusion
from ragloom.retrieval.pipeline import Candidate, leg_candidates, top_k

__all__ = [
    "Candidate",
    "fuse",
    "leg_candidates",
    "reciprocal_rank_fusion",
    "top_k",
    "weighted_fusion",
]
