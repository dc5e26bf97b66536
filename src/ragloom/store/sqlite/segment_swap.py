"""One flush or merge of the embedded store: parts of a collection's view written as one
segment file (without any lock), then committed in their place in one short write
transaction that re-checks nobody changed the same segments meanwhile, and the new view
published in commit order. Deletes and vectors that arrived during the step stay recorded
(`removed`, `vectors`) and are applied to the new segment. A crash, a cancelled or an
interrupted step leaves the old segments or the new one in the manifest, never half."""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from ragloom.segments.merge_file import Cancelled, merge_to_file
from ragloom.segments.schedule import carry_over, replaced
from ragloom.segments.segment import Segment
from ragloom.segments.view import CollectionView
from ragloom.store.sqlite.database import SQLiteDatabase
from ragloom.store.sqlite.errors import from_os
from ragloom.store.sqlite.view_history import read_collections
from ragloom.store.sqlite.write import SQLiteWrite


@dataclass(frozen=True)
class Swapped:
    """A committed flush or merge: the new segment's name, and the segment (None when every
    chunk it would have held was deleted)."""

    name: str
    segment: Segment | None


def swap_in(
    store: SQLiteDatabase,
    view: CollectionView,
    i: int,
    j: int,
    upto: int,
    stop: Callable[[], bool],
) -> Swapped | None:
    """Write parts [i, j) of `view` as one segment file and commit it in their place (a
    flush when they are the in-memory parts, committing rows up to `upto`); None when
    nothing was committed (cancelled by `stop`, or somebody changed them meanwhile)."""
    parts = view.parts[i:j]
    name = f"c{view.collection_id}-{uuid.uuid4().hex[:16]}"
    path = store.files.path(name)
    try:
        store.files.folder.mkdir(exist_ok=True)
        written, size = merge_to_file(parts, view.epoch, view.dimension, path, stop=stop)
    except Cancelled:
        path.unlink(missing_ok=True)
        return None
    except OSError as exc:
        path.unlink(missing_ok=True)
        raise from_os(exc, f"segment file {name}") from None
    except BaseException:  # interrupted (Ctrl-C while a closing caller finishes the work)
        path.unlink(missing_ok=True)
        raise
    if stop():  # closing: not committed, the next opener does it again
        path.unlink(missing_ok=True)
        return None
    if written:
        segment = store.files.get(name)  # mapped from the file
    else:
        path.unlink(missing_ok=True)
        segment = None
    old_names = [p.segment.name for p in parts if p.segment.name]
    flush = i >= view.files
    span = (
        (view.flushed_upto + 1, upto)
        if flush
        else (parts[0].segment.first_row, parts[-1].segment.last_row)
    )
    committed = False
    with store.write_lock:  # commit and publish before any other write of this process
        try:
            with store.write() as write:
                n = segment.n if segment is not None else 0  # 0: every chunk was deleted
                current = _commit(store, write, view, name, n, size, old_names, span, upto)
                if current is None:
                    return None
                generation = write.generation
                committed = True
        finally:
            if not committed and written:
                with contextlib.suppress(OSError):
                    path.unlink()
        new_part = carry_over(segment, current) if segment is not None else None
        store.views.remember(replaced(current, view, i, j, new_part, upto, generation, flush))
    store.files.forget(old_names)
    return Swapped(name, segment)


def _commit(
    store: SQLiteDatabase,
    write: SQLiteWrite,
    view: CollectionView,
    name: str,
    n: int,
    size: int,
    old_names: list[str],
    span: tuple[int, int],
    upto: int,
) -> CollectionView | None:
    """The manifest change, if nobody changed these segments meanwhile; returns the
    collection's view just before this write (None: nothing done)."""
    conn = write.conn
    row = read_collections(conn).get(view.name)
    if row is None or row.id != view.collection_id or row.layout > view.generation:
        return None  # settings changed, or another process flushed or merged
    live = {
        n
        for (n,) in conn.execute(
            "SELECT name FROM segments WHERE collection_id = ? AND retired IS NULL", (row.id,)
        )
    }
    if not set(old_names) <= live or row.flushed_upto != view.flushed_upto:
        return None
    store.views.prepare(conn, row.id)
    current = store.views.current(row.id)
    if current is None:
        return None
    generation = write.generation
    first, last = span
    if n:
        conn.execute(
            "INSERT INTO segments (name, collection_id, first_row, last_row, chunks, bytes,"
            " created) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (name, row.id, first, last, n, size, generation),
        )
    for old in old_names:
        conn.execute(
            "UPDATE segments SET retired = ?, retired_at = ? WHERE name = ?",
            (generation, time.time(), old),
        )
    # Deletes and vectors the new file already reflects are no longer needed.
    for table in ("removed", "vectors"):
        conn.execute(
            f"DELETE FROM {table} WHERE collection_id = ? AND chunk_id BETWEEN ? AND ?"
            " AND generation <= ?",
            (row.id, first, last, view.generation),
        )
    conn.execute(
        "UPDATE collections SET flushed_upto = ?, layout = ?, changed = ? WHERE id = ?",
        (upto, generation, generation, row.id),
    )
    write.touched.add(row.id)
    return current
