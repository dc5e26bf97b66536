"""A numba kernel compiled (or loaded from numba's disk cache) on first use, once per process.
Without numba, with RAGLOOM_KERNELS=0, or when this numba cannot build it, there is none and
the caller's numpy path serves. (The BM25 kernels, `ragloom.lexical.kernels`, load their own
set the same way.)"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable


class Compiled:
    """`build(njit)` run once: it compiles the kernel, calls it once on each kind of array
    it will see (so no search waits for a compile), and returns it."""

    def __init__(self, build: Callable[[Callable], Callable]) -> None:
        self._build = build
        self._loaded: list[Callable | None] = []
        self._lock = threading.Lock()

    def get(self) -> Callable | None:
        """The kernel, or None when the numpy path must serve."""
        if not self._loaded:
            with self._lock:
                if not self._loaded:
                    self._loaded.append(self._load())
        return self._loaded[0]

    def _load(self) -> Callable | None:
        if os.environ.get("RAGLOOM_KERNELS", "1") == "0":
            return None
        try:
            from numba import njit
        except ImportError:
            return None
        try:
            return self._build(njit)
        except Exception:  # noqa: BLE001 - a numba that cannot build it: numpy serves
            return None
