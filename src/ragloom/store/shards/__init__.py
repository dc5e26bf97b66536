"""A collection sharded across PostgreSQL servers (`postgresql+shards://`): documents placed
by a hash of their id, two-phase commit across shards, BM25 with the whole set's statistics."""

from ragloom.store.shards.store import ShardedStore, open_shards

__all__ = ["ShardedStore", "open_shards"]
