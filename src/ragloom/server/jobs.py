"""Indexing jobs: a fixed number of slots, a time limit per job, and a stop at shutdown.

Each `/index` request runs on a daemon thread of its own once a slot is free. When its time
is up (or the server shuts down) the job is told to stop; it does so at its next file or
block, and its answer says where it was. A job that does not stop within a short grace (a
read stuck in the kernel) is abandoned: its slot is freed and, being a daemon thread, it
cannot keep the process alive, so SIGTERM always ends the server.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from contextlib import suppress
from typing import TypeVar

from ragloom.errors import IndexTimeout
from ragloom.loading import StopSignal
from ragloom.server.worker import settle

T = TypeVar("T")
GRACE = 2.0  # seconds a stopped job gets to wind down and report


class IndexJobs:
    """Run `fn(stop)` jobs on daemon threads, at most `slots` at once, each within `timeout`."""

    def __init__(self, slots: int = 2, timeout: float = 600.0) -> None:
        self.slots = slots
        self.timeout = timeout
        self._semaphore: asyncio.Semaphore | None = None
        self._running: set[StopSignal] = set()
        self._closing = False

    async def run(self, fn: Callable[[StopSignal], T]) -> T:
        """Wait for a slot, run the job, and return its result (or raise its error)."""
        if self._semaphore is None:
            self._semaphore = asyncio.Semaphore(self.slots)
        async with self._semaphore:
            stop = StopSignal()
            if self._closing:
                stop.stop("the server is shutting down")
            self._running.add(stop)
            loop = asyncio.get_running_loop()
            future: asyncio.Future[T] = loop.create_future()

            def work() -> None:
                try:
                    outcome: tuple[T | None, BaseException | None] = (fn(stop), None)
                except BaseException as exc:  # handed to the waiting request
                    outcome = (None, exc)
                with suppress(RuntimeError):  # the loop closed: nobody is waiting any more
                    loop.call_soon_threadsafe(settle, future, *outcome)

            threading.Thread(target=work, name="ragloom-index", daemon=True).start()
            try:
                return await asyncio.wait_for(asyncio.shield(future), self.timeout)
            except asyncio.TimeoutError:
                stop.stop(f"it ran longer than {self.timeout:g} s")
                try:
                    return await asyncio.wait_for(asyncio.shield(future), GRACE)
                except asyncio.TimeoutError:
                    raise IndexTimeout(
                        f"indexing ran longer than {self.timeout:g} s and is stuck; it was"
                        " abandoned (what it committed stays)",
                        "check the files' file system, then index the same path again",
                    ) from None
            finally:
                stop.stop("the request ended")  # a no-op once the job is done
                self._running.discard(stop)

    def stop_all(self, reason: str = "the server is shutting down") -> None:
        """Tell every running job to stop (at shutdown); new jobs stop at once."""
        self._closing = True
        for stop in list(self._running):
            stop.stop(reason)
