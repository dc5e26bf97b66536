"""Upgrade an index file from schema 1 (everything in SQLite, document text stored twice,
a second copy of every vector in `embedding_cache`) to schema 2, in one transaction."""

from __future__ import annotations

import sqlite3

import numpy as np

from ragloom.segments.postings import Postings
from ragloom.store.document_text import document_gaps
from ragloom.store.sqlite.database import SQLiteDatabase
from ragloom.store.sqlite.errors import from_sqlite
from ragloom.store.sqlite.schema import SCHEMA, SCHEMA_VERSION

BATCH = 2000


def _old_postings(blob: bytes) -> Postings:
    half = len(blob) // 2
    ids = np.frombuffer(blob[:half], "<u4")
    tfs = np.frombuffer(blob[half:], "<f4")
    return Postings(ids.astype(np.uint32), np.rint(tfs).astype(np.uint32))


def upgrade(store: SQLiteDatabase) -> None:
    """Rewrite a schema-1 file as schema 2 (nothing changes if any step fails)."""
    conn: sqlite3.Connection = store.writer()
    try:
        conn.execute("BEGIN IMMEDIATE")
        version = int(
            conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0]
        )
        if version >= SCHEMA_VERSION:  # another process upgraded it meanwhile
            conn.execute("ROLLBACK")
            return
        for table in ("collections", "documents", "chunks", "terms", "vectors", "embedding_cache"):
            conn.execute(f"ALTER TABLE {table} RENAME TO old_{table}")
        for index in ("chunks_by_document",):
            conn.execute(f"DROP INDEX IF EXISTS {index}")
        conn.execute("DROP TABLE meta")
        for statement in SCHEMA.split(";"):
            if statement.strip():
                conn.execute(statement)
        conn.execute(
            "INSERT INTO meta VALUES ('schema_version', ?), ('generation', '1')",
            (str(SCHEMA_VERSION),),
        )
        conn.execute(
            "INSERT INTO collections (id, name, config, changed, layout)"
            " SELECT id, name, config, 1, 1 FROM old_collections"
        )
        conn.execute("INSERT INTO terms (id, term) SELECT id, term FROM old_terms")
        _copy_documents(conn)
        conn.execute(
            "INSERT INTO vectors (chunk_id, collection_id, generation, vector)"
            " SELECT v.chunk_id, d.collection_id, 1, v.vector FROM old_vectors v"
            " JOIN old_chunks k ON k.id = v.chunk_id JOIN old_documents d ON d.id = k.document_id"
        )
        for table in ("embedding_cache", "vectors", "chunks", "documents", "terms", "collections"):
            conn.execute(f"DROP TABLE old_{table}")
        conn.execute("COMMIT")
    except sqlite3.Error as exc:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise from_sqlite(exc, str(store.path)) from None
    conn.execute("VACUUM")


def _copy_documents(conn: sqlite3.Connection) -> None:
    cursor = conn.execute(
        "SELECT id, collection_id, doc_id, source, title, metadata, content_hash, text, indexed_at"
        " FROM old_documents ORDER BY id"
    )
    while batch := cursor.fetchmany(BATCH):
        ids = [r[0] for r in batch]
        marks = ",".join("?" * len(ids))
        chunks = conn.execute(
            f'SELECT id, document_id, n, start, "end", text, metadata, postings FROM old_chunks'
            f" WHERE document_id IN ({marks}) ORDER BY id",
            ids,
        ).fetchall()
        by_document: dict[int, list[tuple]] = {}
        for chunk in chunks:
            by_document.setdefault(chunk[1], []).append(chunk)
        collection_of = {r[0]: r[1] for r in batch}
        conn.executemany(
            "INSERT INTO documents (id, collection_id, doc_id, source, title, metadata,"
            " content_hash, length, gaps, indexed_at) VALUES (?,?,?,?,?,?,?,?,?,?)",
            [
                (
                    r[0],
                    r[1],
                    r[2],
                    r[3],
                    r[4],
                    r[5],
                    r[6],
                    len(r[7]),
                    document_gaps(r[7], [(c[3], c[4], c[5]) for c in by_document.get(r[0], [])]),
                    r[8],
                )
                for r in batch
            ],
        )
        conn.executemany(
            'INSERT INTO chunks (id, collection_id, document_id, n, start, "end", text, metadata,'
            " terms) VALUES (?,?,?,?,?,?,?,?,?)",
            [
                (
                    c[0],
                    collection_of[c[1]],
                    c[1],
                    c[2],
                    c[3],
                    c[4],
                    c[5],
                    None if c[6] in ("{}", None) else c[6],
                    _old_postings(c[7]).to_bytes(),
                )
                for c in chunks
            ],
        )
    seq = conn.execute("SELECT max(id) FROM chunks").fetchone()[0] or 0
    conn.execute("DELETE FROM sqlite_sequence WHERE name = 'chunks'")
    conn.execute("INSERT INTO sqlite_sequence (name, seq) VALUES ('chunks', ?)", (seq,))
