"""What a watcher says about itself (the sidecar's `/health` shows it): the folders, whether
it listens to native events or polls (and why), when the last change landed, what waits."""

from __future__ import annotations

import threading
import time
from typing import Any

from ragloom.engine.report import IndexReport


def _when(stamp: float | None) -> str | None:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(stamp)) if stamp else None


class WatchStatus:
    """Counters and times of one watcher, updated by its thread, read by anyone."""

    def __init__(self, folders: list[str]) -> None:
        self.folders = folders
        self.mode = "native"  # or "polling"
        self.note: str | None = None  # why it polls
        self.running = False
        self.may_have_pending = True  # chunks may wait for vectors (checked on first fill)
        self._lock = threading.Lock()
        self._since = time.time()
        self._last_change: float | None = None
        self._last_sweep: float | None = None
        self._sweep_seconds = 0.0
        self._batches = self._documents = self._removed = self._lost = 0
        self._last_batch_ms = 0.0
        self._last_error: str | None = None

    def polling(self, why: str) -> None:
        self.mode, self.note = "polling", why

    def landed(self, report: IndexReport, seconds: float) -> None:
        with self._lock:
            self._last_change = time.time()
            self._batches += 1
            self._documents += report.documents
            self._removed += report.removed
            self._last_batch_ms = 1000 * seconds
            if report.pending:
                self.may_have_pending = True

    def swept(self, seconds: float) -> None:
        with self._lock:
            self._last_sweep, self._sweep_seconds = time.time(), seconds

    def lost(self) -> None:
        with self._lock:
            self._lost += 1

    def error(self, message: str) -> None:
        with self._lock:
            self._last_error = message

    def to_dict(self, pending_paths: int, pending_vectors: int) -> dict[str, Any]:
        with self._lock:
            return {
                "folders": self.folders,
                "running": self.running,
                "mode": self.mode,
                "note": self.note,
                "since": _when(self._since),
                "last_change": _when(self._last_change),
                "last_batch_ms": round(self._last_batch_ms, 1),
                "pending": {"paths": pending_paths, "vectors": pending_vectors},
                "batches": self._batches,
                "documents_written": self._documents,
                "documents_removed": self._removed,
                "events_lost": self._lost,
                "last_sweep": _when(self._last_sweep),
                "sweep_seconds": round(self._sweep_seconds, 3),
                "last_error": self._last_error,
            }
