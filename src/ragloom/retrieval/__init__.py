"""The retrieval pipeline: legs produce candidates, small stages refine them into hits."""

from ragloom.retrieval.pipeline import Candidate, fuse, hydrate, lexical_candidates, top_k

__all__ = ["Candidate", "fuse", "hydrate", "lexical_candidates", "top_k"]
