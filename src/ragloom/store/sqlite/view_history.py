"""Building a collection's view from the database, at exactly one generation.

A view is loaded from a snapshot (a read transaction): the segment files the manifest lists,
the deletions and late vectors recorded for their rows, and the newest chunks (above
`flushed_upto`) read from their rows into an in-memory segment. A process whose view is
older catches up from the same tables: chunks added since, rows removed since, vectors
filled since. Every process derives the same view from the same generation.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections import deque
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ragloom.config import CollectionConfig
from ragloom.segments.build import segment_from
from ragloom.segments.merge_memory import compact_memory
from ragloom.segments.persist import SegmentFiles
from ragloom.segments.postings import decode_many
from ragloom.segments.segment import Segment
from ragloom.segments.view import CollectionView, Part
from ragloom.store.rows import dimension_of, epoch_of
from ragloom.store.sql import CollectionRow

HISTORY = 8  # recent views kept per collection, for snapshots a little behind the newest


@dataclass(frozen=True)
class SQLiteCollectionRow(CollectionRow):
    """A collection's row as one snapshot sees it: when it last changed, when its layout
    (settings, model) did, and the newest chunk row written to a segment file."""

    changed: int
    layout: int
    flushed_upto: int


def read_collections(conn: sqlite3.Connection) -> dict[str, SQLiteCollectionRow]:
    rows = conn.execute(
        "SELECT id, name, config, changed, layout, flushed_upto FROM collections"
    ).fetchall()
    return {r[1]: SQLiteCollectionRow(*r) for r in rows}


def _blob_vector(blob: bytes | None, dimension: int | None) -> np.ndarray | None:
    if blob is None or dimension is None:
        return None
    vector = np.frombuffer(blob, np.float32)
    return vector if len(vector) == dimension else None


def chunk_segment(
    conn: sqlite3.Connection, row: SQLiteCollectionRow, after: int, through: int | None = None
) -> Segment | None:
    """An in-memory segment of the collection's chunks with row id in (after, through]."""
    config = row.config
    dimension, epoch = dimension_of(config), epoch_of(config)
    sql = (
        "SELECT c.id, c.terms, c.metadata, d.metadata, v.vector FROM chunks c"
        " JOIN documents d ON d.id = c.document_id"
        " LEFT JOIN vectors v ON v.chunk_id = c.id"
        " WHERE c.collection_id = ? AND c.id > ?"
    )
    params: list[Any] = [row.id, after]
    if through is not None:
        sql += " AND c.id <= ?"
        params.append(through)
    records = conn.execute(sql + " ORDER BY c.id", params).fetchall()
    if not records:
        return None
    doc_meta: dict[str, dict[str, Any]] = {}
    metadatas = []
    for _, _, own, document, _ in records:
        base = doc_meta.get(document)
        if base is None:
            base = doc_meta[document] = json.loads(document)
        metadatas.append({**base, **json.loads(own)} if own else base)
    ids, tfs, counts = decode_many([r[1] for r in records])
    vectors = [_blob_vector(r[4], dimension) for r in records]
    return segment_from(
        [r[0] for r in records], (ids, tfs, counts), metadatas, vectors, dimension, epoch
    )


def load_view(
    conn: sqlite3.Connection, row: SQLiteCollectionRow, generation: int, files: SegmentFiles
) -> CollectionView:
    """The collection as the snapshot `conn` sees it (generation `generation`)."""
    config = row.config
    dimension, epoch = dimension_of(config), epoch_of(config)
    names = conn.execute(
        "SELECT name FROM segments WHERE collection_id = ? AND retired IS NULL ORDER BY first_row",
        (row.id,),
    ).fetchall()
    parts = [Part(files.get(name)) for (name,) in names]
    view = CollectionView(
        collection_id=row.id,
        name=row.name,
        config=CollectionConfig.from_dict(config),
        generation=generation,
        parts=tuple(parts),
        files=len(parts),
        flushed_upto=row.flushed_upto,
        max_row=row.flushed_upto,
        epoch=epoch,
    )
    if parts:
        removed = [
            r
            for (r,) in conn.execute(
                "SELECT chunk_id FROM removed WHERE collection_id = ? AND chunk_id <= ?",
                (row.id, row.flushed_upto),
            )
        ]
        late = {
            r: v
            for r, blob in conn.execute(
                "SELECT chunk_id, vector FROM vectors WHERE collection_id = ? AND chunk_id <= ?",
                (row.id, row.flushed_upto),
            )
            if (v := _blob_vector(blob, dimension)) is not None
        }
        view = view.evolve(generation, removed=removed, late=late)
    newest = chunk_segment(conn, row, row.flushed_upto)
    if newest is not None:
        view = view.evolve(generation, added=[Part(newest)])
    return view


def catch_up(
    conn: sqlite3.Connection,
    view: CollectionView,
    row: SQLiteCollectionRow,
    generation: int,
    files: SegmentFiles,
) -> CollectionView:
    """`view` brought to `generation` (the snapshot `conn` sees): reload when files or
    settings changed, otherwise apply the chunks added, removed and given vectors since."""
    if row.layout > view.generation or row.flushed_upto != view.flushed_upto:
        return load_view(conn, row, generation, files)
    if row.changed <= view.generation:
        return replace(view, generation=generation)
    dimension = dimension_of(row.config)
    removed = [
        r
        for (r,) in conn.execute(
            "SELECT chunk_id FROM removed WHERE collection_id = ? AND generation > ?",
            (row.id, view.generation),
        )
    ]
    gone = set(removed)
    late = {
        r: v
        for r, blob in conn.execute(
            "SELECT chunk_id, vector FROM vectors"
            " WHERE collection_id = ? AND generation > ? AND chunk_id <= ?",
            (row.id, view.generation, view.max_row),
        )
        if r not in gone and (v := _blob_vector(blob, dimension)) is not None
    }
    added = chunk_segment(conn, row, view.max_row)
    view = view.evolve(
        generation, added=[Part(added)] if added is not None else [], removed=removed, late=late
    )
    return compact_memory(view)


class ViewHistory:
    """The newest views of each collection, kept in step with the commits: a snapshot takes
    the view of exactly its generation (`at`, loaded or caught up from the database when
    none is kept), a write brings a view up to date before it changes it (`prepare`), and
    views change only after the transaction they mirror has committed (`remember`)."""

    def __init__(self, files: SegmentFiles) -> None:
        self.files = files
        self._lock = threading.Lock()
        self._views: dict[int, deque[CollectionView]] = {}

    def current(self, collection_id: int) -> CollectionView | None:
        """The newest view of a collection, if one is kept."""
        history = self._views.get(collection_id)
        return history[-1] if history else None

    def at(
        self, conn: sqlite3.Connection, row: SQLiteCollectionRow, generation: int
    ) -> CollectionView:
        """The collection's view at exactly `generation` (the snapshot `conn` is in)."""
        base = None
        with self._lock:  # a copy: another thread may publish a view meanwhile
            history = tuple(self._views.get(row.id, ()))
        for view in reversed(history):
            if view.generation <= generation:
                base = view
                break
        if base is not None and base.generation == generation:
            return base
        if base is None:
            view = load_view(conn, row, generation, self.files)
        else:
            view = catch_up(conn, base, row, generation, self.files)
        self.remember(view)
        return view

    def remember(self, view: CollectionView) -> None:
        """Keep `view` as its collection's newest, unless a newer one is kept already."""
        with self._lock:
            history = self._views.setdefault(view.collection_id, deque(maxlen=HISTORY))
            if not history or history[-1].generation < view.generation:
                history.append(view)

    def prepare(self, conn: sqlite3.Connection, collection_id: int) -> None:
        """Inside a write, before its changes: bring the collection's view to the database's
        committed state, so this write's changes apply on top of it."""
        generation = int(
            conn.execute("SELECT value FROM meta WHERE key='generation'").fetchone()[0]
        )
        current = self.current(collection_id)
        if current is not None and current.generation == generation:
            return
        row = {r.id: r for r in read_collections(conn).values()}.get(collection_id)
        if row is not None:
            self.at(conn, row, generation)

    def replace(self, old: CollectionView, new: CollectionView) -> bool:
        """Put `new` (the same version as `old`, laid out differently) in its place, if `old`
        is still the newest view of its collection."""
        with self._lock:
            history = self._views.get(old.collection_id)
            if not history or history[-1] is not old:
                return False
            history[-1] = new
            return True

    def drop(self, collection_id: int) -> None:
        """Forget a collection's views: the next snapshot loads it from the database."""
        with self._lock:
            self._views.pop(collection_id, None)


def vocabulary_size(view: CollectionView) -> int:
    """Distinct terms in the collection's segments (deleted chunks' terms until merged)."""
    key = ("vocabulary", view.generation)
    cached = view.parts[0].cache.get(key) if view.parts else 0
    if cached is None:
        arrays = [p.segment.terms for p in view.parts]
        cached = int(len(np.unique(np.concatenate(arrays)))) if arrays else 0
        view.parts[0].cache[key] = cached
    return int(cached or 0)
