"""Reading a whole collection of the embedded store back out as `NewDocument`s (chunks with
their index terms and vectors), so `ragloom migrate` copies it elsewhere without
re-chunking or re-embedding."""

from __future__ import annotations

import json
from collections.abc import Iterator

from ragloom.segments.postings import Postings
from ragloom.store.document_text import rebuild_text
from ragloom.store.records import NewChunk, NewDocument
from ragloom.store.sql import SQLITE
from ragloom.store.sqlite.snapshot import SQLiteSnapshot
from ragloom.types import Document


def export_collection(
    snap: SQLiteSnapshot, name: str, batch: int = 200
) -> Iterator[list[NewDocument]]:
    """The collection's documents in batches, all read from the snapshot `snap`."""
    conn = snap.conn
    row = snap.rows[name]
    view = snap.collection(name).view
    has_vectors = bool(view.dimension)
    documents = conn.execute(
        "SELECT id, doc_id, source, title, metadata, content_hash, length, gaps"
        " FROM documents WHERE collection_id = ? ORDER BY id",
        (row.id,),
    ).fetchall()
    for start in range(0, len(documents), batch):
        part = documents[start : start + batch]
        chunks = SQLITE.rows_in(
            conn,
            'SELECT document_id, id, n, start, "end", text, metadata, terms FROM chunks'
            " WHERE document_id {keys} ORDER BY id",
            [],
            [d[0] for d in part],
        )
        postings = [Postings.from_bytes(c[7]) for c in chunks]
        ids = sorted({int(t) for p in postings for t in p.term_ids})
        names = dict(SQLITE.rows_in(conn, "SELECT id, term FROM terms WHERE id {keys}", [], ids))
        vectors = view.vectors_of([c[1] for c in chunks]) if has_vectors else None
        by_document: dict[int, list[NewChunk]] = {}
        for i, (document, _, n, begin, end, text, own, _) in enumerate(chunks):
            p = postings[i]
            terms = [names[int(t)] for t, f in zip(p.term_ids, p.tfs) for _ in range(int(f))]
            vector = None
            if vectors is not None and vectors[i].any():
                vector = vectors[i]
            meta = json.loads(own) if own else {}
            by_document.setdefault(document, []).append(
                NewChunk(n, text, begin, end, meta, terms, vector)
            )
        out = []
        for doc_row, doc_id, source, title, meta, content_hash, length, gaps in part:
            mine = by_document.get(doc_row, [])
            text = rebuild_text(gaps, [(c.start, c.text) for c in mine], length)
            document = Document(doc_id, text, title, source, json.loads(meta))
            out.append(NewDocument(document, content_hash, mine))
        yield out
