"""The server's background retry for chunks that wait for vectors.

When the embedding service was down at indexing time, documents were stored without vectors
(searchable lexically). This thread retries embedding them, backing off while the service
stays down (from `first` seconds, doubling up to `longest`), so they become findable by the
dense leg soon after the service is back, without anyone re-indexing.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable

from ragloom.errors import RagloomError

log = logging.getLogger("uvicorn.error")

FIRST = float(os.environ.get("RAGLOOM_PENDING_RETRY", "5"))
LONGEST = 300.0
BATCH = 1024


class PendingFiller:
    """Calls `fill(limit)` (returns chunks embedded) whenever `waiting()` says some wait."""

    def __init__(
        self,
        fill: Callable[[int], int],
        waiting: Callable[[], int],
        first: float = FIRST,
        longest: float = LONGEST,
    ) -> None:
        self.fill = fill
        self.waiting = waiting
        self.first = first
        self.longest = longest
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="ragloom-pending", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _run(self) -> None:
        delay = self.first
        while not self._stop.wait(delay):
            try:
                if not self.waiting():
                    delay = self.first
                    continue
                done = self.fill(BATCH)
                log.info("embedded %d chunk(s) that were waiting for vectors", done)
                delay = self.first if done else min(delay * 2, self.longest)
            except RagloomError as exc:  # the service is still down: wait longer
                delay = min(delay * 2, self.longest)
                log.info("embedding service still unavailable (%s); retry in %.0f s", exc, delay)
            except Exception:
                delay = min(delay * 2, self.longest)
                log.exception("background embedding of pending chunks failed")
