"""Stale fusion profiles refreshed once writes pause, on a daemon thread of the writing process.

A profile costs two embeddings and two searches a probe (`ragloom.engine.calibration`):
taken after every batch of a bulk load it made loading several times slower. So a write only
marks the profile stale; this thread refreshes it after `PROFILE_AFTER` seconds without writes
(as consolidation and search graphs wait, `ragloom.store.sqlite.maintenance`), and a writable
opener that finds a stale profile does the same. `stop` (at close) gives a refresh up between
batches of probes: nothing half-done is written, the next writable opener takes it up again.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from typing import Any

from ragloom.engine.calibration import Stopped, calibrate
from ragloom.engine.embedders import Embedders
from ragloom.errors import EmbeddingError
from ragloom.store.base import Store

log = logging.getLogger("ragloom.index")

# Idle seconds (no write in this process) before a stale profile is refreshed.
PROFILE_AFTER = float(os.environ.get("RAGLOOM_PROFILE_AFTER", "15"))


class ProfileRefresh:
    """Runs `refresh(stopping)` on a daemon thread once writes have paused for `after` s."""

    def __init__(
        self, refresh: Callable[[Callable[[], bool]], object], after: float | None = None
    ) -> None:
        self._refresh = refresh
        self.after = PROFILE_AFTER if after is None else after
        self.background = os.environ.get("RAGLOOM_BACKGROUND", "1") != "0"
        self._lock = threading.Lock()
        self._wake, self._stop = threading.Event(), threading.Event()
        self._thread: threading.Thread | None = None
        self._due = False  # a refresh is wanted (set by `schedule`, cleared when it starts)
        self._writers = 0  # writes under way in this process: not idle meanwhile
        self._last_write = time.monotonic()

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """Around a write: the idle wait restarts when it ends, however long it took."""
        with self._lock:
            self._writers += 1
        try:
            yield
        finally:
            with self._lock:
                self._writers -= 1
                self._last_write = time.monotonic()

    def schedule(self) -> None:
        """Ask for a refresh once writes pause (after a write that left a profile stale, or
        at open when one is found stale)."""
        if not self.background or self._stop.is_set():
            return
        with self._lock:
            self._due = True
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._loop, name="ragloom-profile", daemon=True
                )
                self._thread.start()
        self._wake.set()

    def idle_for(self) -> float:
        """Seconds since the last write ended, 0 while one is under way."""
        with self._lock:
            return 0.0 if self._writers else time.monotonic() - self._last_write

    def stop(self) -> None:
        """Stop the thread; a refresh under way gives up before its next batch of probes."""
        self._stop.set()
        self._wake.set()
        thread = self._thread
        if thread is not None:
            thread.join()
            self._thread = None

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._wake.wait()
            self._wake.clear()
            while not self._stop.is_set():
                wait = self.after - self.idle_for()
                if wait <= 0:
                    break
                self._stop.wait(wait)  # a later write moves the end of the wait
            if self._stop.is_set():
                return
            with self._lock:
                due, self._due = self._due, False
            if not due:
                continue
            try:
                self._refresh(self._stop.is_set)
            except Exception:  # keep serving; the next write or opener tries again
                log.exception("fusion profile refresh failed")


class FusionProfiles:
    """When each collection's fusion profile is taken: at once for a collection that has none,
    once writes pause for one a write left stale, or now (`refresh`, what `optimize` does)."""

    def __init__(self, store: Store, models: Embedders) -> None:
        self.store, self.models = store, models
        self.wrote = False  # this process stored chunks since open (`finish`)
        self.background = ProfileRefresh(self._in_background)
        if not store.read_only:
            self.background.schedule()  # a stale profile left by an earlier process

    def writing(self) -> contextlib.AbstractContextManager[None]:
        """Around a write: a refresh waits until writes pause."""
        return self.background.writing()

    def after_write(self) -> None:
        """After a write that stored chunks: profile a collection that has none now, and
        leave a stale one for when writes pause."""
        self.wrote = True
        calibrate(self.store, self.models, missing_only=True, quiet=True)
        self.background.schedule()

    def refresh(self, on_step: Callable[[int, str], None] | None = None) -> int:
        """Profile every collection whose profile is missing or stale now; `on_step(done,
        what)` hears of each. Returns how many were profiled; a failing embedding service
        leaves the old profiles, with a warning (the index itself is complete)."""
        done = 0
        try:
            for name in sorted(self.store.collections()):
                for profile in calibrate(self.store, self.models, name).values():
                    done += 1
                    if on_step is not None:
                        on_step(done, f"fusion profile of {name} ({profile['chunks']:,} chunks)")
        except EmbeddingError as exc:
            warnings.warn(f"fusion profile not updated: {exc.message}", stacklevel=3)
        return done

    def finish(self, on_step: Callable[[int, str], None] | None = None) -> int:
        """Before close, when this process stored chunks: refresh the profiles its writes
        left stale now (`refresh`), rather than leave them to the next writable opener."""
        return self.refresh(on_step) if self.wrote else 0

    def close(self) -> None:
        """Stop the background refresh (one under way gives up; nothing half-written)."""
        self.background.stop()

    def _in_background(self, stopping: Callable[[], bool]) -> Any:
        with contextlib.suppress(Stopped):
            calibrate(self.store, self.models, stop=stopping, quiet=True)
