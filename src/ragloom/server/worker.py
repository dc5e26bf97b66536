"""Dedicated threads that run queued searches in batches, off the event loop.

Handing each request to the generic threadpool costs a thread wake-up and a loop wake-up per
request, which on a busy 2-core machine costs about as much CPU as a lexical search itself.
These threads drain whatever queued up while they were busy and answer the whole batch with
one loop wake-up, so the hand-off is shared by every request waiting at that moment
(about 1.5x the /query throughput of the threadpool in bench/server_load.py).
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable
from contextlib import suppress
from typing import Any, TypeVar

T = TypeVar("T")
_Job = tuple[asyncio.AbstractEventLoop, asyncio.Future, Callable[[], Any]]
_Outcome = tuple[asyncio.Future, Any, BaseException | None]


def settle(future: asyncio.Future, value: object, error: BaseException | None) -> None:
    """Runs on the loop: resolve a waiting request with its result or its error (unless it
    was cancelled meanwhile)."""
    if future.cancelled():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(value)


def _deliver(outcomes: list[_Outcome]) -> None:
    """Runs on the loop: resolve each waiting request of a batch."""
    for outcome in outcomes:
        settle(*outcome)


class BatchWorker:
    """`threads` threads sharing one queue of callables; `await run(fn)` for each result.

    Threads start on first use; more than one keeps queries flowing while one of them waits
    (on an embedding service, say). `close()` stops them after the queued work is done.
    """

    def __init__(self, threads: int = 2, max_batch: int = 64, name: str = "ragloom-query") -> None:
        self._queue: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._size = threads
        self._max_batch = max_batch
        self._name = name
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()

    async def run(self, fn: Callable[[], T]) -> T:
        """Run `fn` on a worker thread and wait for its result (or its exception)."""
        if not self._threads:
            self._start()
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._queue.put((loop, future, fn))
        return await future

    def _start(self) -> None:
        with self._lock:
            if self._threads:
                return
            for i in range(self._size):
                thread = threading.Thread(target=self._work, name=f"{self._name}-{i}", daemon=True)
                thread.start()
                self._threads.append(thread)

    def close(self) -> None:
        """Stop the threads once the jobs already queued are done."""
        with self._lock:
            threads, self._threads = self._threads, []
        for _ in threads:
            self._queue.put(None)
        for thread in threads:
            thread.join(timeout=5)  # daemon threads: one stuck on a service cannot hold the exit

    def _take_batch(self) -> tuple[list[_Job], bool]:
        """Block for one job, then take whatever else is queued; True when told to stop."""
        first = self._queue.get()
        if first is None:
            return [], True
        batch = [first]
        while len(batch) < self._max_batch:
            try:
                job = self._queue.get_nowait()
            except queue.Empty:
                break
            if job is None:
                return batch, True
            batch.append(job)
        return batch, False

    def _work(self) -> None:
        stop = False
        while not stop:
            batch, stop = self._take_batch()
            by_loop: dict[asyncio.AbstractEventLoop, list[_Outcome]] = {}
            for loop, future, fn in batch:
                try:
                    outcome: _Outcome = (future, fn(), None)
                except BaseException as exc:  # re-raised in the awaiting request
                    outcome = (future, None, exc)
                by_loop.setdefault(loop, []).append(outcome)
            for loop, outcomes in by_loop.items():
                with suppress(RuntimeError):  # a closed loop: nobody is waiting any more
                    loop.call_soon_threadsafe(_deliver, outcomes)
