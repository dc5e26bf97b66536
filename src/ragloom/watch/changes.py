"""Changed paths, coalesced: the events of a burst (an editor's save, a `git checkout` of
thousands of files) become one batch, not one write per event.

`ChangeQueue.take` hands out everything that gathered once the stream has been quiet for
`quiet` seconds, or once the oldest change has waited `longest` seconds (a steady stream of
changes still lands), so a change is searchable soon after its file is closed however busy
the folder is. `lost` says the OS dropped events (its queue overflowed): a sweep follows.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

QUIET = 0.05  # seconds without a new event before a batch is taken
LONGEST = 0.4  # seconds the oldest change of a batch waits at most


@dataclass
class Batch:
    """Paths that changed (in any way: written, created, removed, renamed from or to)."""

    paths: set[str] = field(default_factory=set)
    lost: bool = False  # events were dropped: the folder must be swept
    first: float = 0.0  # monotonic time of the first change in it


class ChangeQueue:
    """Thread-safe: event threads `put`, the watcher's thread `take`s."""

    def __init__(self, quiet: float = QUIET, longest: float = LONGEST) -> None:
        self.quiet, self.longest = quiet, longest
        self._batch = Batch()
        self._last = 0.0
        self._cond = threading.Condition()
        self._closed = False

    def put(self, paths: list[str] | set[str], lost: bool = False) -> None:
        with self._cond:
            now = time.monotonic()
            if not self._batch.paths and not self._batch.lost:
                self._batch.first = now
            self._batch.paths.update(paths)
            self._batch.lost |= lost
            self._last = now
            self._cond.notify_all()

    def pending(self) -> int:
        with self._cond:
            return len(self._batch.paths)

    def close(self) -> None:
        """Wake a waiting `take` (what is queued is still handed out)."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def _ready(self, now: float) -> bool:
        batch = self._batch
        if not batch.paths and not batch.lost:
            return False
        return self._closed or now - self._last >= self.quiet or now - batch.first >= self.longest

    def take(self, timeout: float) -> Batch | None:
        """The next batch, or None when nothing was ready within `timeout` seconds."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                now = time.monotonic()
                if self._ready(now):
                    batch, self._batch = self._batch, Batch()
                    return batch
                if now >= deadline or (self._closed and not self._batch.paths):
                    return None
                if self._batch.paths or self._batch.lost:  # wake when it would be ready
                    wake = min(self._last + self.quiet, self._batch.first + self.longest)
                    self._cond.wait(max(0.001, min(wake, deadline) - now))
                else:
                    self._cond.wait(deadline - now)
