"""Where a search's time goes: wall-clock milliseconds per stage, collected without plumbing.

A search opens a `StageTimer` (`with timer.running():`); code anywhere below it marks its
stage with `with timed("lexical"):`, a no-op when no timer runs (library calls that did not
ask, bulk ingest). Stages nest and are exclusive: the time of a stage inside another (the
query embedding inside the dense leg) is counted once, in the inner stage, so the stages
add up to the total. The active timer lives in a context variable, so threads and tasks
that run searches in parallel each fill their own; a leg run beside another on a second
thread (`ragloom.engine.beside`) is charged the time the search waited for it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

# The stages a search reports, in pipeline order (a stage that did not run is left out):
# LLM query expansion, query embedding, each leg, fusion and the controls after it (boosts,
# thresholds, diversity), reranking, the multi-hop LLM decisions, fetching the hits' chunk
# text and metadata, and `other`: what lies outside them (query analysis, metadata filter
# evaluation, loading a collection on first use).
STAGES = ("expand", "embed", "lexical", "dense", "fusion", "rerank", "hops", "hydrate", "other")

_active: ContextVar[StageTimer | None] = ContextVar("ragloom_stage_timer", default=None)


class StageTimer:
    """Exclusive milliseconds per stage of one search, plus the total it ran for."""

    def __init__(self) -> None:
        self.ms: dict[str, float] = {}
        self.total_ms: float | None = None
        self._stack: list[list[float]] = []  # per open stage: [start, time of inner stages]

    @contextmanager
    def running(self, rest: str | None = "other") -> Iterator[StageTimer]:
        """Make this the active timer for the block; time outside any stage goes to `rest`."""
        token = _active.set(self)
        started = time.perf_counter()
        try:
            if rest is None:
                yield self
            else:
                with self.stage(rest):
                    yield self
        finally:
            _active.reset(token)
            if rest is None:
                self.total_ms = (time.perf_counter() - started) * 1000.0
            else:  # the outer stage's time, exactly: the stages add up to the total
                self.total_ms = sum(self.ms.values())

    def stage(self, name: str) -> _Stage:
        """Count the block's time (less its inner stages') to `name`; repeats add up."""
        return _Stage(self, name)

    def waited(self, stages: dict[str, float], seconds: float) -> None:
        """Count `seconds` spent waiting for work that ran beside this search (on another
        thread, timed there by stage as `stages`, in the order they ended) to those stages,
        the last ones first: each gets the part of its time the search did not overlap.
        A stage fully overlapped still shows, at 0 ms; with no stages, the enclosing stage
        keeps the time."""
        if not stages:
            return
        stack = self._stack
        if stack:
            stack[-1][1] += seconds
        left = seconds * 1000.0
        for name, ms in reversed(list(stages.items())):
            part = min(ms, left)
            self.ms[name] = self.ms.get(name, 0.0) + part
            left -= part
        if left > 0:  # waiting on the thread's start and end: the last stage's
            last = next(reversed(stages))
            self.ms[last] += left

    def to_dict(self) -> dict[str, float]:
        """Milliseconds per stage that ran, in pipeline order, then `total`."""
        ms = self.ms
        out = {name: round(ms[name], 3) for name in STAGES if name in ms}
        if len(out) < len(ms):  # stages outside STAGES follow, in the order they first ran
            out.update((name, round(v, 3)) for name, v in ms.items() if name not in out)
        if self.total_ms is not None:
            out["total"] = round(self.total_ms, 3)
        return out


class _Stage:
    """One stage's block (`StageTimer.stage`): a plain context manager, not a generator one,
    since a search enters about ten of them (a generator-based one costs two more calls and a
    generator each)."""

    __slots__ = ("_timer", "_name", "_frame")

    def __init__(self, timer: StageTimer | None, name: str) -> None:
        self._timer = timer
        self._name = name

    def __enter__(self) -> None:
        if self._timer is not None:
            self._frame = [time.perf_counter(), 0.0]
            self._timer._stack.append(self._frame)

    def __exit__(self, *exc: object) -> None:
        timer = self._timer
        if timer is None:
            return
        frame = self._frame
        stack = timer._stack
        stack.pop()
        elapsed = time.perf_counter() - frame[0]
        if stack:
            stack[-1][1] += elapsed
        timer.ms[self._name] = timer.ms.get(self._name, 0.0) + (elapsed - frame[1]) * 1000.0


def timed(stage: str) -> _Stage:
    """Count the block to `stage` of the active search's timer (nothing when none runs)."""
    return _Stage(_active.get(), stage)


def active_timer() -> StageTimer | None:
    """The timer of the search running in this context (None when none runs)."""
    return _active.get()
