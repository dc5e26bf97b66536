"""The sweep: OS events are hints, the folder is the truth.

A sweep walks a watched folder as `ragloom index` does and compares each file's size and
modification time with what it was when last indexed (`Marks`); the files that differ, and
every file at the first sweep, go through the ordinary file run, where the content hash
decides whether anything is written. Files gone are found by the mirror
(`ragloom.loading.mirror`). It runs when watching starts (so changes made while no watcher
ran are caught up), after the OS dropped events, and periodically; where native events are
unavailable, it is how the folder is polled. Its cost grows with the tree: one walk and one
`stat` per file (docs/watching.md has the figures).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ragloom.loading.files import FoundFile
from ragloom.watch.paths import Folder

Mark = tuple[int, int]  # (size, modification time in ns) of a file when it was read


def mark_of(file: FoundFile) -> Mark | None:
    """A file's size and modification time now (None: it cannot be examined)."""
    try:
        info = os.stat(file.real_path)
    except OSError:
        return None
    return info.st_size, info.st_mtime_ns


class Marks:
    """What each indexed file (by source) looked like when it was read: what a sweep
    compares with. Kept in memory; a new watcher's first sweep reads every file once."""

    def __init__(self) -> None:
        self._marks: dict[str, Mark] = {}

    def __len__(self) -> int:
        return len(self._marks)

    def changed(self, file: FoundFile, now: Mark | None) -> bool:
        return now is None or self._marks.get(file.source) != now

    def record(self, taken: Mapping[str, Mark | None], failed: Iterable[str] = ()) -> None:
        """Remember the marks of files read (taken before they were read, so a write made
        meanwhile is seen again); files that failed are looked at again next time."""
        for source, mark in taken.items():
            if mark is None:
                self._marks.pop(source, None)
            else:
                self._marks[source] = mark
        for source in failed:
            self._marks.pop(source, None)

    def forget(self, sources: Iterable[str]) -> None:
        for source in sources:
            self._marks.pop(source, None)

    def forget_under(self, folder: str) -> None:
        prefix = folder.rstrip("/") + "/"
        for source in [s for s in self._marks if s.startswith(prefix)]:
            del self._marks[source]


@dataclass
class Sweep:
    """One sweep of a folder: everything its walk met, and the files to read again."""

    found: list[FoundFile] = field(default_factory=list)
    changed: list[FoundFile] = field(default_factory=list)
    marks: dict[str, Mark | None] = field(default_factory=dict)  # of the changed files
    seconds: float = 0.0  # the walk and the stats


def sweep(folder: Folder, marks: Marks) -> Sweep:
    """Walk `folder` and pick the files whose size or modification time moved."""
    started = time.perf_counter()
    out = Sweep(found=folder.walk())
    for file in out.found:
        if file.skip is not None:
            continue
        now = mark_of(file)
        if marks.changed(file, now):
            out.changed.append(file)
            out.marks[file.source] = now
    out.seconds = time.perf_counter() - started
    return out
