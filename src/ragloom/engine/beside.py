"""A search's two legs side by side, on two cores: its lexical leg on a worker thread while
the calling thread runs the dense leg. Waiting on an embedding service and the graph search
(faiss) let go of the GIL, as does the compiled BM25 scoring, so a hybrid query costs about
its slower leg rather than the sum of both. The engine decides when it pays
(`ragloom.engine.legs`: not while the local model embeds the query, since the model uses
every core itself, nor when a filter leaves few chunks), and runs the two legs on it
(`ragloom.engine.legs.leg_answers`).

Runs on a small shared pool, and only when a worker is free at once: under many concurrent
searches (every core busy) a search runs its legs one after the other, as it always did.
`RAGLOOM_PARALLEL_LEGS=0` turns it off. The leg's stages are charged to the search's timer
for the time the search waited on them (`ragloom.timing.StageTimer.waited`)."""

from __future__ import annotations

import contextvars
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Generic, TypeVar

from ragloom.timing import StageTimer, active_timer

T = TypeVar("T")
CORES = os.cpu_count() or 1  # read once: os.cpu_count reads /sys each call (~6 us a query)
WORKERS = max(1, min(8, CORES))


def enabled() -> bool:
    """Whether legs may run beside each other: off with RAGLOOM_PARALLEL_LEGS=0, and on a
    single core (nothing to overlap on)."""
    return os.environ.get("RAGLOOM_PARALLEL_LEGS", "1") != "0" and CORES > 1


_free = threading.BoundedSemaphore(WORKERS)
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _workers() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(WORKERS, thread_name_prefix="ragloom-leg")
        return _pool


def _forget_workers() -> None:
    """In a forked child: the parent's worker threads do not exist there (a task handed to
    them would never run), so the child starts its own pool when it first needs one."""
    global _pool, _free, _pool_lock
    _pool, _free, _pool_lock = None, threading.BoundedSemaphore(WORKERS), threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_workers)


class Beside(Generic[T]):
    """`fn(*args)` started on a worker thread when one is free and `start` is true (else
    run by `result`, in the caller's thread), in a copy of the caller's context. Use as a
    context manager: leaving the block waits for the work, so it never outlives the
    snapshot it reads, even when the block raised."""

    def __init__(self, fn: Callable[..., T], *args: Any, start: bool = True) -> None:
        self._fn, self._args = fn, args
        self._timer = StageTimer()
        self._future: Future[T] | None = None
        self._taken = False
        if start and enabled() and _free.acquire(blocking=False):
            try:
                self._future = _workers().submit(contextvars.copy_context().run, self._run)
            except RuntimeError:  # the interpreter is shutting down: run it in line
                _free.release()

    def _run(self) -> T:
        try:
            with self._timer.running(rest=None):
                return self._fn(*self._args)
        finally:
            _free.release()

    @property
    def in_background(self) -> bool:
        """True when the work runs on a worker thread."""
        return self._future is not None

    def result(self) -> T:
        """The work's value (its exception raised here); time waited on it goes to the
        search's timer, split over the stages the work ran, the last ones first."""
        self._taken = True
        if self._future is None:
            return self._fn(*self._args)
        started = time.perf_counter()
        try:
            return self._future.result()
        finally:
            timer = active_timer()
            if timer is not None:
                timer.waited(self._timer.ms, time.perf_counter() - started)

    def __enter__(self) -> Beside[T]:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._future is not None and not self._taken:
            self._future.exception()  # wait; its outcome is not wanted (the block failed)
