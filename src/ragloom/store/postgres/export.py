"""Reading a whole collection of a PostgreSQL index back out as `NewDocument`s (chunks with
their index terms and vectors), for `ragloom migrate`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ragloom.store.document_text import rebuild_text
from ragloom.store.records import NewChunk, NewDocument
from ragloom.types import Document


def export_rows(
    conn: Any, collection_id: int, batch: int = 200, doc_ids: list[str] | None = None
) -> Iterator[list[NewDocument]]:
    """A collection's documents (or those of `doc_ids` that exist) in batches, read on `conn`
    (a snapshot's, or a write transaction's when documents move between shards)."""
    only = " AND doc_id = ANY(%s)" if doc_ids is not None else ""
    documents = conn.execute(
        "SELECT id, doc_id, source, title, metadata, content_hash, length, gaps"
        f" FROM documents WHERE collection_id = %s{only} ORDER BY id",
        (collection_id, doc_ids) if doc_ids is not None else (collection_id,),
    ).fetchall()
    for start in range(0, len(documents), batch):
        part = documents[start : start + batch]
        chunks = (
            conn.cursor(binary=True)
            .execute(
                'SELECT document_id, n, start, "end", text, own, terms, tfs, embedding'
                " FROM chunks WHERE document_id = ANY(%s) ORDER BY id",
                ([d[0] for d in part],),
            )
            .fetchall()
        )
        by_document: dict[int, list[NewChunk]] = {}
        for document, n, begin, end, text, own, terms, tfs, vector in chunks:
            repeated = [t for t, f in zip(terms, tfs) for _ in range(int(f))]
            by_document.setdefault(document, []).append(
                NewChunk(n, text, begin, end, own or {}, repeated, vector)
            )
        out = []
        for doc_row, doc_id, source, title, meta, content_hash, length, gaps in part:
            mine = by_document.get(doc_row, [])
            text = rebuild_text(gaps, [(c.start, c.text) for c in mine], length)
            document = Document(doc_id, text, title, source, meta)
            out.append(NewDocument(document, content_hash, mine))
        yield out
