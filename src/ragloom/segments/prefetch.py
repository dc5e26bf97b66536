"""Mapping a segment file's pages before the first searches need them.

A segment file is mapped, not read (`ragloom.segments.files`): each 4 KB page a search
touches for the first time costs a page fault, even when the file sits in the page cache. A
search just after open scores candidates scattered over the vectors (the graph's re-scoring,
a filter's exact scan) and faults on most of them: at 100k chunks the first dense searches
took twice the time of later ones. So a daemon thread asks the kernel to map every page of
each newly opened file (Linux's MADV_POPULATE_READ, in one system call that lets other
threads run), reading what the page cache lacks. Files are mapped while they fit in half of
the memory available, so an index larger than memory is never pulled in whole; elsewhere
than Linux nothing is done.
"""

from __future__ import annotations

import ctypes
import logging
import mmap
import queue
import sys
import threading
from typing import Any

import numpy as np

log = logging.getLogger("ragloom.store")

MADV_POPULATE_READ = 22  # Linux 5.14 and later (older kernels refuse it: nothing is done)
PAGE = mmap.PAGESIZE
SHARE_OF_AVAILABLE = 0.5  # mapped files populated while they fit in this much free memory


def mapping_of(array: np.ndarray) -> mmap.mmap | None:
    """The memory map an array of a segment file is a view of (None for arrays in memory)."""
    base: Any = array
    while base is not None and not isinstance(base, mmap.mmap):
        base = base.obj if isinstance(base, memoryview) else getattr(base, "base", None)
    return base


def available_bytes() -> int:
    """Memory the system can give without swapping (MemAvailable), 0 when unknown."""
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class Prefetcher:
    """Populates the pages of what it is handed (`add`: a mapped file, or an array over
    mapped memory), one at a time, on a daemon thread started on first use; at most
    `SHARE_OF_AVAILABLE` of the available memory in all."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[tuple[Any, Any]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._budget: int | None = None  # bytes still to populate (set at first use)
        self._madvise = _libc_madvise()

    def add(self, memory: mmap.mmap | np.ndarray | None, keep: object = None) -> None:
        """Populate `memory` soon; `keep` is held meanwhile (what owns the mapping)."""
        if memory is None or self._madvise is None:
            return
        if isinstance(memory, mmap.mmap) and memory.closed:
            return
        size = len(memory) if isinstance(memory, mmap.mmap) else memory.nbytes
        with self._lock:
            if self._budget is None:
                self._budget = int(available_bytes() * SHARE_OF_AVAILABLE)
            if size > self._budget:
                return
            self._budget -= size
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="ragloom-prefetch", daemon=True
                )
                self._thread.start()
        self._queue.put((memory, keep))

    def _run(self) -> None:
        while True:
            memory, _ = self._queue.get()
            try:
                array = np.frombuffer(memory, np.uint8) if isinstance(memory, mmap.mmap) else memory
                start = array.ctypes.data & ~(PAGE - 1)  # madvise wants a page boundary
                length = array.ctypes.data + array.nbytes - start
                self._madvise(start, length, MADV_POPULATE_READ)  # (GIL released)
            except (ValueError, OSError) as exc:  # closed meanwhile, or refused: nothing lost
                log.debug("prefetch skipped: %s", exc)
            del memory, array


def _libc_madvise() -> Any:
    """libc's madvise through ctypes (which lets other threads run during the call), or None
    where MADV_POPULATE_READ does not exist."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        madvise = libc.madvise
    except (OSError, AttributeError):
        return None
    madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    madvise.restype = ctypes.c_int
    return madvise


SHARED = Prefetcher()  # one per process: the memory budget is the machine's
