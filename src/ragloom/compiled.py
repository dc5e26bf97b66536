"""A numba kernel (or a set of them) compiled, or loaded from numba's disk cache, on first use,
once per process. Without numba, or with RAGLOOM_KERNELS=0, there is none and the caller's
numpy path serves. So too when this numba cannot build it (a kernel's LLVM intrinsic may name
what another LLVM does not know): searches stay right, only slower, and a warning says so once.
A process that answers one question and exits loads none (`serve_without_loading`): loading
them costs more than numpy's paths take for one query."""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


_without_loading = threading.Event()


def serve_without_loading() -> None:
    """From now on, kernels not yet loaded stay unloaded and the callers' numpy paths serve
    (those already loaded still do). For a process that answers a question and exits (`ragloom
    search`): loading them from numba's cache takes 0.3-0.6 s (numba, LLVM and scipy imported),
    compiling them about 20 s on a first run, where numpy's exact paths answer a query at 100k
    chunks in milliseconds."""
    _without_loading.set()


class Compiled(Generic[T]):
    """`build(njit)` run once: it compiles the kernel, calls it once on each kind of array
    it will see (so no search waits for a compile), and returns it."""

    def __init__(self, build: Callable[[Callable], T]) -> None:
        self._build = build
        self._loaded: list[T | None] = []
        self._lock = threading.Lock()

    def get(self) -> T | None:
        """The kernel (loaded now if it was not), or None when the numpy path must serve."""
        if not self._loaded:
            if _without_loading.is_set():
                return None
            with self._lock:
                if not self._loaded:
                    self._loaded.append(self._load())
        return self._loaded[0]

    def _load(self) -> T | None:
        if os.environ.get("RAGLOOM_KERNELS", "1") == "0":
            return None
        try:
            from numba import njit
        except ImportError:
            return None
        try:
            return self._build(njit)
        except Exception as exc:  # noqa: BLE001 - a numba that cannot build it: numpy serves
            warnings.warn(
                f"numba could not build {self._build.__module__}'s kernels ({exc!r});"
                " numpy serves instead, slower",
                RuntimeWarning,
                stacklevel=2,
            )
            return None

    def loaded(self) -> T | None:
        """The kernel if it is loaded already; never loads it."""
        return self._loaded[0] if self._loaded else None
