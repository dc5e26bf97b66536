"""Dense retrieval: exact cosine search over a collection's unit vectors."""

from ragloom.dense.index import DenseIndex

__all__ = ["DenseIndex"]
