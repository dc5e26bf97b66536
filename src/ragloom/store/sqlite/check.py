"""`ragloom check`: does everything in an embedded index agree with everything else?

Checks SQLite's own integrity, then, per collection, rebuilds from the chunk rows alone what
the searchable state must be (live chunks, their postings and lengths, BM25 statistics,
vectors) and compares it with what the segment files and in-memory segments serve.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import numpy as np

from ragloom.segments.postings import Postings
from ragloom.segments.view import CollectionView
from ragloom.store.document_text import stitch
from ragloom.store.sqlite.snapshot import SQLiteSnapshot


def check_snapshot(snap: SQLiteSnapshot) -> list[str]:
    """Problems found in the version `snap` reads (empty: healthy)."""
    problems: list[str] = []
    conn: sqlite3.Connection = snap.conn
    for (message,) in conn.execute("PRAGMA quick_check"):
        if message != "ok":
            problems.append(f"sqlite: {message}")
    for table, rowid, parent, _ in conn.execute("PRAGMA foreign_key_check"):
        problems.append(f"sqlite: row {rowid} of {table} points at a missing {parent} row")
    problems += _orphans(conn)
    for name in sorted(snap.rows):
        try:
            view = snap.collection(name).view
        except Exception as exc:  # a missing or damaged segment file
            problems.append(f"collection {name!r}: cannot load its segments ({exc})")
            continue
        problems += [f"collection {name!r}: {p}" for p in _collection(conn, view)]
    return problems


def _orphans(conn: sqlite3.Connection) -> list[str]:
    out = []
    for sql, what in (
        (
            "SELECT count(*) FROM chunks c LEFT JOIN documents d ON d.id = c.document_id"
            " WHERE d.id IS NULL",
            "chunk rows without a document",
        ),
        (
            "SELECT count(*) FROM vectors v LEFT JOIN chunks c ON c.id = v.chunk_id"
            " WHERE c.id IS NULL",
            "vector rows without a chunk",
        ),
        (
            "SELECT count(*) FROM removed r JOIN chunks c ON c.id = r.chunk_id",
            "chunks marked removed that still exist",
        ),
        (
            "SELECT count(*) FROM chunks c JOIN documents d ON d.id = c.document_id"
            " WHERE c.collection_id != d.collection_id",
            "chunks filed under another collection than their document",
        ),
    ):
        count = conn.execute(sql).fetchone()[0]
        if count:
            out.append(f"{count} {what}")
    return out


def _collection(conn: sqlite3.Connection, view: CollectionView) -> list[str]:
    problems: list[str] = []
    records = conn.execute(
        "SELECT id, terms FROM chunks WHERE collection_id = ? ORDER BY id", (view.collection_id,)
    ).fetchall()
    stored = {row: Postings.from_bytes(blob) for row, blob in records}
    live: dict[int, tuple[Any, int]] = {}
    for part in view.parts:
        alive = np.ones(part.segment.n, bool) if part.dead is None else ~part.dead
        for doc in np.flatnonzero(alive).tolist():
            live[int(part.segment.rows[doc])] = (part, doc)
    if set(live) != set(stored):
        missing = sorted(set(stored) - set(live))[:5]
        extra = sorted(set(live) - set(stored))[:5]
        problems.append(
            f"searchable chunks differ from stored chunks (missing {missing}, extra {extra})"
        )
    # Postings: every live chunk's terms and frequencies, as the segments hold them.
    seen: dict[int, dict[int, int]] = {row: {} for row in live}
    for part in view.parts:
        seg = part.segment
        term_of = np.repeat(seg.terms, np.diff(seg.ptr))
        alive = np.ones(seg.n, bool) if part.dead is None else ~part.dead
        keep = alive[seg.docs]
        for term, doc, tf in zip(
            term_of[keep].tolist(), seg.docs[keep].tolist(), seg.tfs[keep].tolist()
        ):
            seen[int(seg.rows[doc])][term] = tf
    wrong = [
        row
        for row, postings in stored.items()
        if row in seen and seen[row] != dict(zip(postings.term_ids.tolist(), postings.tfs.tolist()))
    ]
    if wrong:
        problems.append(f"{len(wrong)} chunks whose postings differ from their rows: {wrong[:5]}")
    lengths = [
        float(part.segment.lengths[doc]) != float(stored[row].length)
        for row, (part, doc) in live.items()
        if row in stored
    ]
    if any(lengths):
        problems.append(f"{sum(lengths)} chunks with a wrong length")
    total = sum(p.length for p in stored.values())
    if view.n_live != len(stored) or abs(view.total_length - total) > 1e-6 * max(total, 1):
        problems.append(
            f"statistics: {view.n_live} chunks / {view.total_length} terms served, "
            f"{len(stored)} / {total} stored"
        )
    problems += _vectors(conn, view, live)
    problems += _documents(conn, view)
    return problems


def _vectors(conn: sqlite3.Connection, view: CollectionView, live: dict) -> list[str]:
    if not view.dimension:
        return []
    out = []
    table = {
        row: np.frombuffer(blob, np.float32)
        for row, blob in conn.execute(
            "SELECT chunk_id, vector FROM vectors WHERE collection_id = ?", (view.collection_id,)
        )
    }
    rows = sorted(table)
    served = view.vectors_of(rows) if rows else np.zeros((0, view.dimension), np.float32)
    differ = [r for r, v in zip(rows, served) if r in live and not np.array_equal(table[r], v)]
    if differ:
        out.append(f"{len(differ)} vectors differ from their stored rows: {differ[:5]}")
    bad = [r for r, v in table.items() if len(v) != view.dimension]
    if bad:
        out.append(f"{len(bad)} stored vectors have the wrong dimension")
    return out


def _documents(conn: sqlite3.Connection, view: CollectionView) -> list[str]:
    out = []
    docs = conn.execute(
        "SELECT id, doc_id, length, gaps FROM documents WHERE collection_id = ?",
        (view.collection_id,),
    ).fetchall()
    broken = []
    for document, doc_id, length, gaps in docs:
        pieces = [(s, t) for s, t in json.loads(gaps)] if gaps else []
        pieces += conn.execute(
            "SELECT start, text FROM chunks WHERE document_id = ?", (document,)
        ).fetchall()
        if len(stitch(pieces, length)) != length:
            broken.append(doc_id)
    if broken:
        out.append(f"{len(broken)} documents whose text cannot be rebuilt: {broken[:5]}")
    return out
