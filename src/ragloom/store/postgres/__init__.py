"""The PostgreSQL + pgvector store (`pip install ragloom[postgres]`): BM25 from ragloom's own
postings and statistics in SQL, vectors in pgvector, one snapshot per search."""

from ragloom.store.postgres.store import PostgresStore, open_postgres

__all__ = ["PostgresStore", "open_postgres"]
