"""The operating system's file events, as hints of which paths to look at again.

Events are never trusted for what changed, only for where: the watcher looks at each path it
is told of (exists? which file? unchanged?) and a sweep catches whatever events missed.
`native_events` starts watchdog's native observer (inotify, FSEvents, ReadDirectoryChanges;
chosen over watchfiles by measurement: docs/watching.md) over the folders and forwards
every path, both ends of a move, to `sink`. A queue overflow is forwarded as `lost`. When
native events cannot be had (inotify limits reached, a file system without them) it returns
None and the reason, and the watcher polls by sweeping instead.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

Sink = Callable[[list[str], bool], None]  # (paths, lost)
OVERFLOW_LOGGER = "watchdog.observers.inotify_c"


class _Overflows(logging.Handler):
    """watchdog only logs a kernel queue overflow: this turns the log line into `lost`."""

    def __init__(self, sink: Sink) -> None:
        super().__init__(logging.WARNING)
        self.sink = sink

    def emit(self, record: logging.LogRecord) -> None:
        if "overflow" in record.getMessage().lower():
            self.sink([], True)


class NativeEvents:
    """A running watchdog observer over some folders; `stop()` ends it."""

    def __init__(self, observer: Any, overflows: _Overflows) -> None:
        self.observer, self.overflows = observer, overflows

    def stop(self) -> None:
        logging.getLogger(OVERFLOW_LOGGER).removeHandler(self.overflows)
        self.observer.stop()
        self.observer.join(timeout=5)


REMOTE = ("nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "afs", "ceph", "glusterfs", "davfs")
MOUNTS = Path("/proc/self/mounts")


def remote_file_system(folder: Path) -> str | None:
    """The type of the network file system `folder` is on (its events miss changes made by
    other machines), or None (a local one, or not known)."""
    try:
        lines = MOUNTS.read_text().splitlines()
    except OSError:
        return None
    best, kind = "", ""
    for line in lines:
        fields = line.split()
        if len(fields) < 3:
            continue
        point = fields[1].replace("\\040", " ")
        if (str(folder) + "/").startswith(point.rstrip("/") + "/") and len(point) >= len(best):
            best, kind = point, fields[2]
    remote = kind in REMOTE or kind.startswith(("fuse.sshfs", "fuse.rclone", "fuse.s3"))
    return kind if remote else None


def native_events(folders: Sequence[Path], sink: Sink) -> tuple[NativeEvents | None, str]:
    """Native events of `folders` (recursive) sent to `sink`, or (None, why not)."""
    for folder in folders:
        kind = remote_file_system(folder)
        if kind is not None:
            return (
                None,
                f"{folder} is on a network file system ({kind}) whose events miss"
                " changes made elsewhere",
            )
    from watchdog.events import FileSystemEventHandler
    from watchdog.observers import Observer

    class Forward(FileSystemEventHandler):
        def on_any_event(self, event: Any) -> None:
            if event.event_type in ("opened", "closed_no_write"):
                return  # reads change nothing
            paths = [os.fsdecode(event.src_path)]
            if getattr(event, "dest_path", ""):
                paths.append(os.fsdecode(event.dest_path))
            sink(paths, False)

    overflows = _Overflows(sink)
    logging.getLogger(OVERFLOW_LOGGER).addHandler(overflows)
    observer = Observer()
    try:
        for folder in folders:
            observer.schedule(Forward(), str(folder), recursive=True)
        observer.start()
    except OSError as exc:
        logging.getLogger(OVERFLOW_LOGGER).removeHandler(overflows)
        observer.stop()
        return None, f"native file events are unavailable ({exc.strerror or exc})"
    return NativeEvents(observer, overflows), ""
