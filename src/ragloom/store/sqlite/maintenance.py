"""Background work of a writing process: flushing new chunks to segment files, merging them.

New chunks live in memory (and in their SQLite rows) until there are `flush_rows` of them;
then they are written as one immutable segment file. Segment files are merged by the tiered
policy; `ragloom.segments.schedule` decides what is due. Each step builds its file from one
view without holding any lock, then commits the manifest change in one short write
transaction, re-checking that nobody changed the same segments meanwhile; deletes and
vectors that arrived during the step stay recorded (`removed`, `vectors`) and are applied to
the new segment. A crash leaves the old segments or the new one in the manifest, never half.

Nobody has to ask for the steady state: a process that opens a writable index resumes the
work an earlier one left pending (`resume`, after `RESUME_AFTER` seconds so that a short
search-and-exit never starts it), `run_now` finishes it with progress (`ragloom index` does
before it exits), and `stop` (at close) gives up a step midway by removing its unfinished
file: nothing half-done is ever committed, and the next opener takes the work up again.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator

from ragloom.dense import graph as ann
from ragloom.dense.graph import attach_graph
from ragloom.segments.merge_file import Cancelled, merge_to_file
from ragloom.segments.schedule import (
    CONSOLIDATE_ROWS,
    FLUSH_ROWS,
    MERGE_FACTOR,
    carry_over,
    consolidation_plan,
    flush_due,
    merge_plan,
    replaced,
    settled,
    tail_due,
)
from ragloom.segments.view import CollectionView
from ragloom.store.sqlite.cleanup import clean_files
from ragloom.store.sqlite.database import SQLiteDatabase
from ragloom.store.sqlite.errors import from_os
from ragloom.store.sqlite.view_history import read_collections
from ragloom.store.sqlite.write import SQLiteWrite

log = logging.getLogger("ragloom.store")

SETTLE_AFTER = 0.5  # seconds without writes before in-memory segments are folded together
# Idle s since open or the last write before consolidation and graphs (> a script's pauses)
GRAPH_AFTER = float(os.environ.get("RAGLOOM_GRAPH_AFTER", "15"))
RESUME_AFTER = float(os.environ.get("RAGLOOM_RESUME_AFTER", "2"))  # open -> pending work


class Maintenance:
    """A daemon thread doing flushes and merges after writes; `run_now` does them inline."""

    def __init__(
        self, store: SQLiteDatabase, flush_rows: int | None = None, factor: int | None = None
    ) -> None:
        self.store = store
        self.flush_rows = flush_rows or FLUSH_ROWS
        self.factor = factor or MERGE_FACTOR
        self.consolidate_rows = CONSOLIDATE_ROWS
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock, self._lock_writers = threading.Lock(), threading.Lock()  # steps, writers
        self.background = os.environ.get("RAGLOOM_BACKGROUND", "1") != "0"
        self.last_write = 0.0
        self.writers = 0  # Index.add calls under way in this process: not idle meanwhile
        self._forced = False  # run_now: idle-time work runs at once
        self.deferred = 0.0  # idle seconds the work put off by the last round waits for
        self.last_step = ""  # what the last step did, in words (for progress)
        self._first_wait: float | None = None

    def _start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="ragloom-merge", daemon=True)
            self._thread.start()

    def nudge(self) -> None:
        """Ask for a round of work (after a write)."""
        self.last_write = time.monotonic()
        if not self.background:
            return
        self._start()
        self._wake.set()

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """Around a bulk write (all of an `Index.add`): idle-time work (folding, consolidation,
        graphs) waits until it ends, however long its batches take to chunk and embed."""
        with self._lock_writers:
            self.writers += 1
        try:
            yield
        finally:
            with self._lock_writers:
                self.writers -= 1
            self.last_write = time.monotonic()

    def idle_for(self) -> float:
        """Seconds since the last write, 0 while one is being prepared."""
        if self._forced:
            return float("inf")
        return 0.0 if self.writers else time.monotonic() - self.last_write

    def resume(self, after: float | None = None) -> None:
        """At open: take up pending flushes, merges and graphs in the background once the
        process has been open `after` seconds (default `RESUME_AFTER`); searches meanwhile
        read the current segments (nothing pending: it finds nothing and sleeps). Consolidation
        and graphs count their idle wait from here: the opener may be about to write."""
        if not self.background or self._stop.is_set():
            return
        self.last_write = max(self.last_write, time.monotonic())
        self._first_wait = RESUME_AFTER if after is None else after
        self._start()

    def stop(self) -> None:
        """Stop the background thread: a step under way gives up and removes its unfinished
        file (`Cancelled`), so close never waits for a long merge nor leaves half of one."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def _defer(self, idle: float) -> None:  # some work waits for `idle` s without writes
        self.deferred = min(self.deferred or idle, idle)

    def stopping(self) -> bool:  # (a step polls it to give up midway)
        return self._stop.is_set()

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """No flush or merge runs while the block does (a repair rebuilds the files)."""
        with self._lock:
            yield

    def _loop(self) -> None:
        waiting = self._first_wait is not None  # work that runs once writes pause is not done
        timeout = self._first_wait
        while not self._stop.is_set():
            woken = self._wake.wait(timeout=timeout if waiting else None)
            self._wake.clear()
            if woken:
                self._stop.wait(SETTLE_AFTER)  # let a burst of writes finish first
            try:
                while not self._stop.is_set() and self.step():
                    pass
                waiting = self.deferred > 0
                timeout = max(self.deferred - self.idle_for(), 0.0) + 0.05  # until idle enough
            except Exception:  # keep serving; the next write retries
                log.exception("background merge failed")
                waiting = False

    def run_now(self, on_step: Callable[[int, str], None] | None = None) -> int:
        """Do every pending flush, merge and graph now, in this thread; `on_step(done, what)`
        hears of each step as it finishes. Returns the number of steps."""
        self._forced = True
        done = 0
        try:
            while self.step():
                done += 1
                if on_step is not None:
                    on_step(done, self.last_step)
        finally:
            self._forced = False
        return done

    # -- one step ---------------------------------------------------------------------
    def step(self) -> bool:
        """One flush or merge if any is due; True when something was done."""
        self.deferred = 0.0
        with self._lock:
            store = self.store
            with store.snapshot() as snap:
                rows = snap.rows
                views = [snap.collection(name).view for name in sorted(rows)]
            for view in views:
                if flush_due(view, self.flush_rows):
                    return self._flush(view)
                plan = merge_plan(view, self.factor, self.flush_rows)
                if plan is not None:
                    return self._merge(view, *plan)
            for idle_work in (self._settle, self._flush_tail, self._consolidate, self._build_graph):
                if any(idle_work(view) for view in views):
                    return True
            clean_files(self.store)
            return False

    def outstanding(self) -> list[str]:
        """The work still due, in words (empty once the index is in its steady state):
        flushes, merges, and large segments without their search graph."""
        with self.store.snapshot() as snap:
            views = [snap.collection(name).view for name in sorted(snap.rows)]
        due = []
        for view in views:
            if flush_due(view, self.flush_rows):
                due.append(f"{view.name}: flush")
            elif tail_due(view, self.flush_rows):
                due.append(f"{view.name}: flush the last chunks once writes pause")
            if merge_plan(view, self.factor, self.flush_rows) is not None:
                due.append(f"{view.name}: merge")
            plan = consolidation_plan(view, self.consolidate_rows)
            if plan is not None:
                due.append(f"{view.name}: merge {plan[1] - plan[0]} small segments into one")
            if ann.available():
                due.extend(
                    f"{view.name}: graph over {p.segment.n:,} chunks"
                    for p in view.parts[: view.files]
                    if p.segment.ann is None
                    and p.segment.n >= ann.ANN_MIN
                    and p.segment.vectors is not None
                )
        return due

    def _build_graph(self, view: CollectionView) -> bool:
        """Once writes pause, give the next large segment its approximate-search graph."""
        if not ann.available():
            return False
        for part in view.parts[: view.files]:
            segment = part.segment
            if segment.ann is not None or segment.n < ann.ANN_MIN or segment.vectors is None:
                continue
            if self.idle_for() < GRAPH_AFTER:
                self._defer(GRAPH_AFTER)
                return False
            path = self.store.files.path(segment.name)
            if attach_graph(segment, path):
                continue  # another process built it
            try:
                ann.AnnIndex.build(segment.vectors, ann.ann_path(path), stop=self.stopping)
            except Cancelled:
                return False  # nothing was written (the graph file appears only when whole)
            except OSError as exc:
                raise from_os(exc, f"graph of segment {segment.name}") from None
            self.last_step = f"search graph over {segment.n:,} chunks"
            return attach_graph(segment, path)
        return False

    def _consolidate(self, view: CollectionView) -> bool:
        """Once writes pause, merge the newest small segment files into one (before their
        graphs are built), so that queries look in fewer places."""
        plan = consolidation_plan(view, self.consolidate_rows)
        if plan is None:
            return False
        if self.idle_for() < GRAPH_AFTER:
            self._defer(GRAPH_AFTER)
            return False
        return self._merge(view, *plan)

    def _flush_tail(self, view: CollectionView) -> bool:
        """Once writes pause, write the in-memory tail a bulk load left (below a flush) to a
        file, so that consolidation can merge it and it gets a graph."""
        if not tail_due(view, self.flush_rows):
            return False
        if self.idle_for() < GRAPH_AFTER:
            self._defer(GRAPH_AFTER)
            return False
        return self._flush(view)

    def _settle(self, view: CollectionView) -> bool:
        """Once writes pause, fold the in-memory segments into one: the same version, read
        faster (a pure memory change, nothing is written)."""
        if len(view.parts) - view.files < 2:
            return False
        if self.idle_for() < SETTLE_AFTER:
            self._defer(SETTLE_AFTER)
            return False
        folded = settled(view)  # (two in-memory segments or more: never None here)
        self.last_step = "in-memory segments folded together"
        return folded is not None and self.store.views.replace(view, folded)

    def _flush(self, view: CollectionView) -> bool:
        memory = view.parts[view.files :]
        upto = memory[-1].segment.last_row
        return self._replace(view, view.files, len(view.parts), upto)

    def _merge(self, view: CollectionView, i: int, j: int) -> bool:
        return self._replace(view, i, j, view.flushed_upto)

    def _replace(self, view: CollectionView, i: int, j: int, upto: int) -> bool:
        """Write parts [i, j) of `view` as one segment file and commit it in their place."""
        store = self.store
        parts = view.parts[i:j]
        name = f"c{view.collection_id}-{uuid.uuid4().hex[:16]}"
        try:
            store.files.folder.mkdir(exist_ok=True)
            written, size = merge_to_file(
                parts, view.epoch, view.dimension, store.files.path(name), stop=self.stopping
            )
        except Cancelled:
            store.files.path(name).unlink(missing_ok=True)
            return False
        except OSError as exc:
            store.files.path(name).unlink(missing_ok=True)
            raise from_os(exc, f"segment file {name}") from None
        if self.stopping():  # closing: not committed, the next opener does it again
            store.files.path(name).unlink(missing_ok=True)
            return False
        if written:
            segment = store.files.get(name)  # mapped from the file
        else:
            store.files.path(name).unlink(missing_ok=True)
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
                    current = self._commit(write, view, name, n, size, old_names, span, upto)
                    if current is None:
                        return False
                    generation = write.generation
                    committed = True
            finally:
                if not committed and written:
                    with contextlib.suppress(OSError):
                        store.files.path(name).unlink()
            new_part = carry_over(segment, current) if segment is not None else None
            store.views.remember(replaced(current, view, i, j, new_part, upto, generation, flush))
        store.files.forget(old_names)
        chunks = sum(p.segment.n for p in parts)
        self.last_step = (
            f"{chunks:,} new chunks written to a segment file"
            if flush
            else f"{len(parts)} segments merged ({chunks:,} chunks)"
        )
        return True

    def _commit(
        self,
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
        store = self.store
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
