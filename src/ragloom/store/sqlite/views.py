"""Building a collection's view from the database, at exactly one generation.

A view is loaded from a snapshot (a read transaction): the segment files the manifest lists,
the deletions and late vectors recorded for their rows, and the newest chunks (above
`flushed_upto`) read from their rows into an in-memory segment. A process whose view is
older catches up from the same tables: chunks added since, rows removed since, vectors
filled since. Every process derives the same view from the same generation.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from ragloom.config import CollectionConfig
from ragloom.segments.ann import AnnIndex, ann_path
from ragloom.segments.ann import available as ann_available
from ragloom.segments.persist import load_segment
from ragloom.segments.policy import plan_merge
from ragloom.segments.postings import decode_many
from ragloom.segments.segment import Segment, build_segment_flat, merge_segments
from ragloom.segments.view import CollectionView, Part

log = logging.getLogger("ragloom.store")

MEMORY_FACTOR = 8  # in-memory segments merge in tiers of this many
MEMORY_FLOOR = 64


class SegmentMissing(Exception):
    """A segment file listed in the snapshot's manifest is gone (merged away meanwhile)."""


@dataclass(frozen=True)
class CollectionRow:
    """A collection's row as one snapshot sees it."""

    id: int
    name: str
    config_json: str
    changed: int
    layout: int
    flushed_upto: int

    @property
    def config(self) -> dict[str, Any]:
        """The stored configuration (parsed once per distinct text; do not modify it)."""
        return parse_config(self.config_json)


@lru_cache(maxsize=256)
def parse_config(text: str) -> dict[str, Any]:
    return json.loads(text)


def read_collections(conn: sqlite3.Connection) -> dict[str, CollectionRow]:
    rows = conn.execute(
        "SELECT id, name, config, changed, layout, flushed_upto FROM collections"
    ).fetchall()
    return {r[1]: CollectionRow(*r) for r in rows}


def epoch_of(config: dict[str, Any]) -> int:
    return int((config.get("embedding") or {}).get("epoch", 0))


def dimension_of(config: dict[str, Any]) -> int | None:
    value = (config.get("embedding") or {}).get("dimension")
    return int(value) if value else None


def attach_graph(segment: Segment, path: Path) -> bool:
    """Give a segment its approximate-search graph if its file exists and reads well."""
    graph = ann_path(path)
    if segment.ann is not None or not graph.exists() or not ann_available():
        return segment.ann is not None
    try:
        index = AnnIndex.load(graph)
    except Exception as exc:  # derived data: a damaged graph means exact search
        log.warning("ignoring damaged graph %s (%s); run `ragloom check --repair`", graph, exc)
        return False
    if index.n != segment.n:
        log.warning("ignoring stale graph %s; run `ragloom check --repair`", graph)
        return False
    object.__setattr__(segment, "ann", index)  # a cache beside immutable data
    return True


class SegmentFiles:
    """Segment files of one index, mapped once and shared by every view that uses them."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._loaded: dict[str, Segment] = {}
        self._lock = threading.Lock()

    def path(self, name: str) -> Path:
        return self.folder / f"{name}.seg"

    def get(self, name: str) -> Segment:
        segment = self._loaded.get(name)
        if segment is not None:
            return segment
        try:
            segment = load_segment(self.path(name), name)
        except FileNotFoundError:
            raise SegmentMissing(name) from None
        attach_graph(segment, self.path(name))
        with self._lock:
            return self._loaded.setdefault(name, segment)

    def add(self, segment: Segment) -> None:
        with self._lock:
            self._loaded[segment.name] = segment

    def forget(self, names: Sequence[str]) -> None:
        with self._lock:
            for name in names:
                self._loaded.pop(name, None)


def _blob_vector(blob: bytes | None, dimension: int | None) -> np.ndarray | None:
    if blob is None or dimension is None:
        return None
    vector = np.frombuffer(blob, np.float32)
    return vector if len(vector) == dimension else None


def chunk_segment(
    conn: sqlite3.Connection, row: CollectionRow, after: int, through: int | None = None
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


def segment_from(
    rows: Sequence[int],
    postings: tuple[np.ndarray, np.ndarray, np.ndarray],
    metadatas: Sequence[dict[str, Any]],
    vectors: Sequence[np.ndarray | None],
    dimension: int | None,
    epoch: int,
) -> Segment:
    """An in-memory segment from flat postings; chunks whose vector is None are pending."""
    matrix = has = None
    if dimension is not None:
        matrix = np.zeros((len(rows), dimension), np.float32)
        has = np.fromiter((v is not None for v in vectors), bool, len(vectors))
        if has.any():
            matrix[has] = np.stack([v for v in vectors if v is not None])
    ids, tfs, counts = postings
    return build_segment_flat(rows, ids, tfs, counts, metadatas, matrix, has, epoch)


def load_view(
    conn: sqlite3.Connection, row: CollectionRow, generation: int, files: SegmentFiles
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
    row: CollectionRow,
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


def merge_parts(parts: Sequence[Part], epoch: int, dimension: int | None) -> Segment:
    """One segment of the live chunks of `parts` (their late vectors folded in)."""
    late: dict[int, np.ndarray] = {}
    for part in parts:
        if part.late_vectors is not None:
            rows = part.segment.rows[part.late_docs]
            late.update(zip(rows.tolist(), part.late_vectors))
    return merge_segments(
        [(p.segment, p.dead) for p in parts], epoch, dimension, late if late else None
    )


def compact_memory(view: CollectionView) -> CollectionView:
    """Merge in-memory segments in tiers so a run of small writes never leaves many of them."""
    memory = list(view.parts[view.files :])
    while True:
        plan = plan_merge(
            [p.segment.n for p in memory],
            [p.n_dead for p in memory],
            MEMORY_FACTOR,
            MEMORY_FLOOR,
            max_dead=0.5,
        )
        if plan is None:
            break
        i, j = plan
        merged = merge_parts(memory[i:j], view.epoch, view.dimension)
        memory[i:j] = [Part(merged)] if merged.n else []
    if len(memory) == len(view.parts) - view.files and all(
        a is b for a, b in zip(memory, view.parts[view.files :])
    ):
        return view
    return replace(view, parts=view.parts[: view.files] + tuple(memory))
