"""One write transaction of the PostgreSQL store.

Documents, chunks, postings, document frequencies and the collection's counters change in
one transaction under the schema's advisory write lock (taken by `PostgresStore.write`), so
the lexical statistics always describe exactly the live chunks. New rows go in with COPY.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np
import psycopg

from ragloom.store.document_text import text_hash
from ragloom.store.postgres.hnsw import HnswBuilder, index_name
from ragloom.store.postgres.vectors import vector_text
from ragloom.store.records import ChunkTerms, CollectionInfo, NewDocuments, WriteOutcome
from ragloom.store.rows import (
    checked_vectors,
    chunk_vectors_dimension,
    dimension_of,
    document_row,
    epoch_of,
    to_json,
)
from ragloom.store.sql import POSTGRES, SQLWrite


class PostgresWrite(SQLWrite):
    """Operations inside one open write transaction (the write lock is held)."""

    dialect = POSTGRES

    def __init__(self, indexer: HnswBuilder, conn: psycopg.Connection, generation: int) -> None:
        self.indexer = indexer
        self.conn = conn
        self.generation = generation
        self.touched: set[int] = set()
        self.grown: dict[int, tuple[int, int]] = {}  # collection -> (vectors, dimension)
        self._configs: dict[int, dict[str, Any]] = {}
        self._deltas: dict[int, list[int]] = {}  # collection -> [chunks, length, vectors]

    # -- collections ------------------------------------------------------------------
    def insert_collection(self, name: str, config: dict[str, Any]) -> int:
        return int(
            self.conn.execute(
                "INSERT INTO collections (name, config) VALUES (%s, %s) RETURNING id",
                (name, to_json(config)),
            ).fetchone()[0]
        )

    def set_config(self, collection: CollectionInfo, config: dict[str, Any]) -> None:
        self.conn.execute(
            "UPDATE collections SET config = %s WHERE id = %s", (to_json(config), collection.id)
        )
        self._configs[collection.id] = config
        self.touched.add(collection.id)

    # -- removing ---------------------------------------------------------------------
    def _remove(self, collection: CollectionInfo, document_ids: Sequence[int]) -> int:
        """Delete documents (row ids) with their chunks, postings and statistics, in one
        statement (document frequencies that reach 0 stay as 0 and are ignored)."""
        if not document_ids:
            return 0
        if (self.stored_config(collection).get("embedding") or {}).get("model"):
            self._cache_vectors(collection, document_ids)
        gone = self.conn.execute(
            "WITH gone AS (SELECT id, length, embedding IS NOT NULL AS has, terms FROM chunks"
            "  WHERE document_id = ANY(%(docs)s)),"
            " gt AS (SELECT g.id, t.term FROM gone g, unnest(g.terms) AS t(term)),"
            " dp AS (DELETE FROM postings p USING gt WHERE p.collection_id = %(c)s"
            "  AND p.term = gt.term AND p.chunk_id = gt.id),"
            " us AS (UPDATE term_stats s SET df = s.df - n.n FROM (SELECT term, count(*) AS n"
            "  FROM gt GROUP BY term) n WHERE s.collection_id = %(c)s AND s.term = n.term),"
            " dd AS (DELETE FROM documents WHERE id = ANY(%(docs)s))"
            " SELECT count(*), coalesce(sum(length), 0), count(*) FILTER (WHERE has) FROM gone",
            {"docs": list(document_ids), "c": collection.id},
        ).fetchone()
        chunks, length, vectors = (int(x) for x in gone)
        self._count(collection, -chunks, -length, -vectors)
        return chunks

    def _count(self, collection: CollectionInfo, chunks: int, length: int, vectors: int) -> None:
        """Counter changes, applied once at `finish`."""
        delta = self._deltas.setdefault(collection.id, [0, 0, 0])
        delta[0] += chunks
        delta[1] += length
        delta[2] += vectors
        self.touched.add(collection.id)

    def _cache_vectors(self, collection: CollectionInfo, document_ids: Sequence[int]) -> None:
        """Keep the vectors of chunks about to be deleted, so re-adding their text is free."""
        model = (self.stored_config(collection).get("embedding") or {}).get("model")
        rows = (
            self.conn.cursor(binary=True)
            .execute(
                "SELECT d.title, c.text, c.embedding FROM chunks c JOIN documents d"
                " ON d.id = c.document_id WHERE c.document_id = ANY(%s)"
                " AND c.embedding IS NOT NULL",
                (list(document_ids),),
            )
            .fetchall()
        )
        if not rows:
            return
        entries = {text_hash(t, x): v for t, x, v in rows}
        with self.conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO vector_cache (model, text_hash, vector) VALUES (%s, %s, %s)"
                " ON CONFLICT (model, text_hash) DO UPDATE SET vector = EXCLUDED.vector,"
                " id = nextval('vector_cache_id_seq')",
                [(model, h, v) for h, v in entries.items()],
            )
        self.trim_vector_cache()

    def delete(self, collection: CollectionInfo, doc_id: str) -> int | None:
        row = self.conn.execute(
            "SELECT id FROM documents WHERE collection_id = %s AND doc_id = %s",
            (collection.id, doc_id),
        ).fetchone()
        self.touched.add(collection.id)
        if row is None:
            return None
        return self._remove(collection, [int(row[0])])

    # -- adding -----------------------------------------------------------------------
    def put(
        self, collection: CollectionInfo, documents: NewDocuments, terms: ChunkTerms | None = None
    ) -> WriteOutcome:
        outcome = WriteOutcome()
        self.touched.add(collection.id)
        if not documents:
            return outcome
        existing = self.document_rows(collection, [d.document.id for d in documents])
        outcome.removed_chunks = self._remove(collection, existing)
        chunks = [c for d in documents for c in d.chunks]
        known = [c.vector for c in chunks if c.vector is not None]
        dimension, changed = chunk_vectors_dimension(self.stored_config(collection), known)
        if changed is not None:
            self.set_config(collection, changed)
        if terms is None:  # the chunks carry their own lists: no round trip through numbers
            term_lists = [c.terms for c in chunks]
        else:
            term_lists = ChunkTerms.for_chunks(terms, chunks).lists()
        rows = self._insert(collection, documents, term_lists)
        length = sum(map(len, term_lists))
        self._count(collection, len(rows), length, len(known))
        outcome.documents = len(documents)
        outcome.chunks = len(rows)
        outcome.rows = rows
        outcome.pending = len(chunks) - len(known) if dimension is not None else 0
        return outcome

    def _insert(
        self,
        collection: CollectionInfo,
        documents: NewDocuments,
        term_lists: Sequence[Sequence[str]],
    ) -> list[int]:
        """COPY the documents, chunks and postings in (`term_lists`: each chunk's terms, in
        order); returns the chunk row ids."""
        conn = self.conn
        n_chunks = sum(len(d.chunks) for d in documents)
        doc_ids, chunk_ids = conn.execute(
            "SELECT array(SELECT nextval('documents_id_seq') FROM generate_series(1, %s)),"
            " array(SELECT nextval('chunks_id_seq') FROM generate_series(1, %s))",
            (len(documents), n_chunks),
        ).fetchone()
        now = time.time()
        df: Counter[str] = Counter()
        with conn.cursor() as cur:
            with cur.copy(
                "COPY documents (id, collection_id, doc_id, source, title, metadata,"
                " content_hash, length, gaps, indexed_at) FROM STDIN"
            ) as copy:
                for row_id, new in zip(doc_ids, documents):
                    copy.write_row((row_id, *document_row(new, collection.id, now)))
            ids = iter(chunk_ids)
            chunk_terms = iter(term_lists)
            postings: list[tuple[int, str, int, int]] = []
            with cur.copy(
                'COPY chunks (id, collection_id, document_id, n, start, "end", text, own,'
                " metadata, length, terms, tfs, embedding) FROM STDIN"
            ) as copy:
                for doc_row, new in zip(doc_ids, documents):
                    base = new.document.metadata
                    for c in new.chunks:
                        row_id = next(ids)
                        words = next(chunk_terms)
                        counts = Counter(words)
                        df.update(counts.keys())
                        length = len(words)
                        postings.extend((row_id, t, f, length) for t, f in counts.items())
                        merged = {**base, **c.metadata} if c.metadata else base
                        copy.write_row(
                            (
                                row_id,
                                collection.id,
                                doc_row,
                                c.n,
                                c.start,
                                c.end,
                                c.text,
                                to_json(c.metadata) if c.metadata else None,
                                to_json(merged),
                                length,
                                list(counts),
                                list(counts.values()),
                                None if c.vector is None else vector_text(c.vector),
                            )
                        )
            with cur.copy(
                "COPY postings (collection_id, term, chunk_id, tf, length) FROM STDIN"
            ) as copy:
                for row_id, term, tf, length in postings:
                    copy.write_row((collection.id, term, row_id, tf, length))
        if df:
            conn.execute(
                "INSERT INTO term_stats (collection_id, term, df)"
                " SELECT %s, t, n FROM unnest(%s::text[], %s::int[]) AS u(t, n)"
                " ON CONFLICT (collection_id, term) DO UPDATE SET df = term_stats.df + EXCLUDED.df",
                (collection.id, list(df), list(df.values())),
            )
        return chunk_ids

    # -- vectors ----------------------------------------------------------------------
    def set_vectors(
        self, collection: CollectionInfo, rows: Sequence[int], vectors: np.ndarray
    ) -> int:
        self.touched.add(collection.id)
        if not len(rows):
            return 0
        vectors, changed = checked_vectors(self.stored_config(collection), vectors)
        if changed is not None:
            self.set_config(collection, changed)
        ids = [int(r) for r in rows]
        filled = self.conn.execute(
            "SELECT count(*) FROM chunks WHERE id = ANY(%s) AND collection_id = %s"
            " AND embedding IS NULL",
            (ids, collection.id),
        ).fetchone()[0]
        alive = self.conn.execute(
            "UPDATE chunks c SET embedding = u.v::vector FROM unnest(%s::bigint[], %s::text[])"
            " AS u(id, v) WHERE c.id = u.id AND c.collection_id = %s",
            (ids, [vector_text(v) for v in vectors], collection.id),
        ).rowcount
        self._count(collection, 0, 0, filled)
        return alive

    def reset_vectors(self, collection: CollectionInfo, config: dict[str, Any]) -> None:
        old = self.stored_config(collection)
        embedding = dict(config.get("embedding") or {})
        embedding["epoch"] = epoch_of(old) + 1
        dimension = dimension_of(old)
        if dimension:
            self.conn.execute(f'DROP INDEX IF EXISTS "{index_name(collection.id, dimension)}"')
            self.indexer.forget(collection.id)
        self.conn.execute(
            "UPDATE chunks SET embedding = NULL WHERE collection_id = %s AND embedding IS NOT NULL",
            (collection.id,),
        )
        self.conn.execute("UPDATE collections SET vectors = 0 WHERE id = %s", (collection.id,))
        self._deltas.get(collection.id, [0, 0, 0])[2] = 0
        self.set_config(collection, {**config, "embedding": embedding})

    # -- commit -----------------------------------------------------------------------
    def finish(self) -> None:
        """Apply the counters and record the new generation (just before COMMIT)."""
        for collection_id in sorted(self.touched):
            chunks, length, vectors = self._deltas.get(collection_id, (0, 0, 0))
            row = self.conn.execute(
                "UPDATE collections SET chunks = chunks + %s, total_length = total_length + %s,"
                " vectors = vectors + %s, changed = %s WHERE id = %s RETURNING vectors, config",
                (chunks, length, vectors, self.generation, collection_id),
            ).fetchone()
            if row is not None and vectors > 0:
                dimension = dimension_of(json.loads(row[1])) or 0
                self.grown[collection_id] = (int(row[0]), dimension)
