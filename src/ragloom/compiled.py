"""A numba kernel (or a set of them) compiled, or loaded from numba's disk cache, on first use,
once per process. Without numba, or with RAGLOOM_KERNELS=0, there is none and the caller's
numpy path serves. So too when this numba cannot build it (a kernel's LLVM intrinsic may name
what another LLVM does not know): searches stay right, only slower, and a warning says so once."""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Compiled(Generic[T]):
    """`build(njit)` run once: it compiles the kernel, calls it once on each kind of array
    it will see (so no search waits for a compile), and returns it."""

    def __init__(self, build: Callable[[Callable], T]) -> None:
        self._build = build
        self._loaded: list[T | None] = []
        self._lock = threading.Lock()

    def get(self) -> T | None:
        """The kernel, or None when the numpy path must serve."""
        if not self._loaded:
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
