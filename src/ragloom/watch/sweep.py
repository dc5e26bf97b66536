"""The sweep: OS events are hints, the folder is the truth.

A sweep walks a watched folder as `ragloom index` does and compares each file's size and
modification time with what it was when last indexed (`Marks`); the files that differ, and
every file at the first sweep, go through the ordinary file run, where the content hash
decides whether anything is written (`ragloom.watch.marks`). Files gone are found by the mirror
(`ragloom.loading.mirror`). It runs when watching starts (so changes made while no watcher
ran are caught up), after the OS dropped events, and periodically; where native events are
unavailable, it is how the folder is polled. Its cost grows with the tree: one walk and one
`stat` per file (docs/watching.md has the figures).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from ragloom.loading.files import FoundFile
from ragloom.watch.marks import Mark, Marks, mark_of
from ragloom.watch.paths import Folder


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
