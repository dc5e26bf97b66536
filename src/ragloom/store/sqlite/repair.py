"""`ragloom check --repair`: rebuild what is derived from the rows when it is missing or
damaged: segment files (from the chunk rows; vectors that lived only in a lost file become
pending and are re-embedded later) and approximate-search graphs; remove stray files."""

from __future__ import annotations

import contextlib
import time

import numpy as np

from ragloom.dense import graph as ann
from ragloom.dense.graph import attach_graph
from ragloom.segments.persist import load_segment
from ragloom.store.sqlite.database import SQLiteDatabase
from ragloom.store.sqlite.maintenance import Maintenance
from ragloom.store.sqlite.view_history import SQLiteCollectionRow, read_collections


def repair_store(store: SQLiteDatabase, maintenance: Maintenance) -> list[str]:
    """Fix what can be fixed; returns what was done."""
    actions: list[str] = []
    with maintenance.paused():
        with store.snapshot() as snap:
            rows = read_collections(snap.conn)
            manifest = snap.conn.execute(
                "SELECT name, collection_id FROM segments WHERE retired IS NULL"
            ).fetchall()
            listed = {n for (n,) in snap.conn.execute("SELECT name FROM segments")}
        broken: dict[int, list[str]] = {}
        healthy: dict[int, list[str]] = {}
        for name, collection_id in manifest:
            try:
                load_segment(store.files.path(name), name)
            except (OSError, ValueError, KeyError) as exc:
                broken.setdefault(collection_id, []).append(f"{name} ({exc})")
            else:
                healthy.setdefault(collection_id, []).append(name)
        for row in rows.values():
            if row.id in broken:
                lost = _rebuild_collection(store, row, healthy.get(row.id, []))
                actions.append(
                    f"collection {row.name!r}: segment files {', '.join(broken[row.id])} were "
                    f"missing or damaged; rebuilt from its rows ({lost} chunk(s) wait for vectors)"
                )
                store.views.drop(row.id)
        folder = store.files.folder
        if folder.is_dir():
            for entry in sorted(folder.iterdir()):
                if entry.name.split(".")[0] not in listed or entry.suffix == ".tmp":
                    with contextlib.suppress(OSError):
                        entry.unlink()
                        actions.append(f"removed stray file {entry.name}")
    maintenance.run_now()
    actions += _graphs(store)
    return actions


def _rebuild_collection(store: SQLiteDatabase, row: SQLiteCollectionRow, healthy: list[str]) -> int:
    """Move every chunk back to the newest (in-memory) part: retire all segment files,
    keeping the vectors of the healthy ones as rows. Returns chunks left without a vector."""
    with store.write() as write:
        conn = write.conn
        alive = {
            r for (r,) in conn.execute("SELECT id FROM chunks WHERE collection_id = ?", (row.id,))
        }
        kept = {
            r
            for (r,) in conn.execute(
                "SELECT chunk_id FROM vectors WHERE collection_id = ?", (row.id,)
            )
        }
        for name in healthy:
            segment = load_segment(store.files.path(name), name)
            vectors, has_vector = segment.vectors, segment.has_vector
            if vectors is None or has_vector is None:
                continue
            entries = [
                (
                    int(r),
                    row.id,
                    write.generation,
                    np.asarray(vectors[i], np.float32).tobytes(),
                )
                for i, r in enumerate(segment.rows.tolist())
                if r in alive and r not in kept and has_vector[i]
            ]
            conn.executemany(
                "INSERT OR REPLACE INTO vectors (chunk_id, collection_id, generation, vector)"
                " VALUES (?, ?, ?, ?)",
                entries,
            )
            kept.update(e[0] for e in entries)
        conn.execute(
            "UPDATE segments SET retired = ?, retired_at = ? WHERE collection_id = ?"
            " AND retired IS NULL",
            (write.generation, time.time(), row.id),
        )
        conn.execute("DELETE FROM removed WHERE collection_id = ?", (row.id,))
        conn.execute(
            "UPDATE collections SET flushed_upto = 0, layout = ?, changed = ? WHERE id = ?",
            (write.generation, write.generation, row.id),
        )
        write.touched.add(row.id)
        embedded = bool(row.config.get("embedding"))
    return len(alive - kept) if embedded else 0


def _graphs(store: SQLiteDatabase) -> list[str]:
    """Build graphs that large segments lack (missing, stale or damaged files)."""
    if not ann.available():
        return []
    out = []
    with store.snapshot() as snap:
        views = [snap.collection(name).view for name in snap.rows]
    for view in views:
        for part in view.parts[: view.files]:
            segment = part.segment
            if segment.n < ann.ANN_MIN or segment.vectors is None or segment.ann is not None:
                continue
            path = store.files.path(segment.name)
            if attach_graph(segment, path):
                continue
            graph = ann.ann_path(path)
            graph.unlink(missing_ok=True)
            ann.AnnIndex.build(segment.vectors, graph)
            attach_graph(segment, path)
            out.append(f"built the search graph of segment {segment.name}")
    return out
