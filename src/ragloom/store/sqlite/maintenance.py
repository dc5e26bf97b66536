"""Background work of a writing process: flushing new chunks to segment files, merging them.

New chunks live in memory (and in their SQLite rows) until there are `flush_rows` of them;
then they are written as one immutable segment file. Segment files are merged by the tiered
policy; `ragloom.segments.schedule` decides what is due, `ragloom.store.sqlite.segment_swap`
writes each new file and commits it in place of the old ones (a crash leaves the old
segments or the new one in the manifest, never half). A merged segment whose first input
had a search graph carries that graph on (`ann.GraphBuild`): only the other rows are
inserted.

Nobody has to ask for the steady state: a process that wrote finishes the work its writes
made due before it closes (`finish`, with progress), a process that opens a writable index
resumes the work an earlier one left pending (`resume`, after `RESUME_AFTER` seconds so that
a short search-and-exit never starts it), `run_now` does it all at once, and `stop` (at
close) gives up a step midway by removing its unfinished file: nothing half-done is ever
committed, and the next opener takes the work up again.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator

from ragloom.segments.schedule import (
    CONSOLIDATE_ROWS,
    FLUSH_ROWS,
    MERGE_FACTOR,
    consolidation_plan,
    flush_due,
    merge_plan,
    settled,
    tail_due,
)
from ragloom.segments.view import CollectionView
from ragloom.store.sqlite.cleanup import clean_files
from ragloom.store.sqlite.database import SQLiteDatabase
from ragloom.store.sqlite.graph_work import GraphWork
from ragloom.store.sqlite.segment_swap import swap_in

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
        self.wrote = False  # this process wrote since open: `finish` does the work at close
        self._closing = False  # `finish` under way: the in-memory fold is not worth doing
        self.graphs = GraphWork(store)  # graphs under way, and carried on through merges

    def _start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="ragloom-merge", daemon=True)
            self._thread.start()

    def nudge(self) -> None:
        """Ask for a round of work (after a write)."""
        self.last_write = time.monotonic()
        self.wrote = True
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

    def finish(self, on_step: Callable[[int, str], None] | None = None) -> int:
        """Before close, when this process wrote: the flushes, merges, consolidation and
        graphs its writes made due, done now (`run_now`), so that the next opener searches
        the steady state from its first query. Returns the number of steps."""
        if not self.wrote:
            return 0
        self._closing = True
        try:
            return self.run_now(on_step)
        finally:
            self._closing = False

    # -- one step ---------------------------------------------------------------------
    def step(self) -> bool:
        """One flush or merge if any is due; True when something was done."""
        self.deferred = 0.0
        with self._lock:
            store = self.store
            with store.snapshot() as snap:
                rows = snap.rows
                views = [snap.collection(name).view for name in sorted(rows)]
            self.graphs.forget_gone(views)
            for view in views:
                if flush_due(view, self.flush_rows):
                    return self._flush(view)
                plan = merge_plan(view, self.factor, self.flush_rows)
                if plan is not None:
                    return self._merge(view, *plan)
            for idle_work in (self._settle, self._flush_tail, self._consolidate, self._build_graph):
                if any(idle_work(view) for view in views):
                    return True
            if any(self._grow_graph(view) for view in views):
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
            due.extend(
                f"{view.name}: graph over {p.segment.n:,} chunks" for p in self.graphs.due(view)
            )
        return due

    def _build_graph(self, view: CollectionView) -> bool:
        """Once writes pause, give the next large segment its approximate-search graph."""
        if not self.graphs.due(view):
            return False
        if self.idle_for() < GRAPH_AFTER:
            self._defer(GRAPH_AFTER)
            return False
        return self._graph_step(self.graphs.build(view, self.stopping))

    def _grow_graph(self, view: CollectionView) -> bool:
        """While writes go on, a batch of rows into the graph of a segment a bulk load keeps
        (`GraphWork.grow`): flushes and merges come first between batches."""
        floor = self.flush_rows
        return self._graph_step(self.graphs.grow(view, self.factor, floor, self.stopping))

    def _graph_step(self, done: str | None) -> bool:
        if done is None:
            return False
        self.last_step = done
        return True

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
        if self._closing or len(view.parts) - view.files < 2:
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
        parts = view.parts[i:j]
        swapped = swap_in(self.store, view, i, j, upto, self.stopping)
        if swapped is None:
            return False
        flush = i >= view.files
        if swapped.segment is not None and not flush:
            self.graphs.carry(swapped.name, parts[0], view.epoch)
        chunks = sum(p.segment.n for p in parts)
        self.last_step = (
            f"{chunks:,} new chunks written to a segment file"
            if flush
            else f"{len(parts)} segments merged ({chunks:,} chunks)"
        )
        return True
