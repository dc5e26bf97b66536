"""The retrieval pipeline as pure functions: the legs' answers fused into candidates, small
stages refining them into the top k (`ragloom.retrieval.ranking`)."""

from ragloom.retrieval.fusion import fuse
from ragloom.retrieval.pipeline import Candidate, head_of, ordered

__all__ = ["Candidate", "fuse", "head_of", "ordered"]
