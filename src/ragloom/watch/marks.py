"""What each indexed file looked like when it was read (size and modification time): what a
sweep compares with, so an unchanged file is not read again.

The marks live in memory and in a small SQLite file in the user's cache folder, one per
index and collection, so a watcher started again (after a crash, say) need not read every
file. A mark on disk is trusted only while it matches the index: each is kept with the
content hash its file's document had, and at start only the marks whose document still has
that hash are taken (a document deleted by hand, or an index restored from a backup, makes
its file be read again). The file is a cache: losing it costs one reading of every file.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import sqlite3
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from ragloom.loading.files import FoundFile

Mark = tuple[int, int]  # (size, modification time in ns) of a file when it was read
log = logging.getLogger("ragloom.watch")


def mark_of(file: FoundFile) -> Mark | None:
    """A file's size and modification time now (None: it cannot be examined)."""
    try:
        info = os.stat(file.real_path)
    except OSError:
        return None
    return info.st_size, info.st_mtime_ns


def cache_folder() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "ragloom" / "watch"


def marks_file(index_key: str, collection: str) -> Path:
    """Where the marks of one index's collection are kept."""
    digest = hashlib.sha256(f"{index_key}\0{collection}".encode()).hexdigest()[:24]
    return cache_folder() / f"marks-{digest}.sqlite"


class Marks:
    """Marks by source (a file's real path); `path`: the file that keeps them (None: memory
    only). Used by one watcher's thread at a time."""

    def __init__(self, path: Path | None = None) -> None:
        self._marks: dict[str, Mark] = {}
        self._db: sqlite3.Connection | None = None
        if path is not None:
            self._db = _open(path)

    def __len__(self) -> int:
        return len(self._marks)

    def changed(self, file: FoundFile, now: Mark | None) -> bool:
        return now is None or self._marks.get(file.source) != now

    def load(self, stored: Mapping[str, str]) -> int:
        """Take the kept marks whose file's document still has the content hash it had
        (`stored`: source -> content hash now); returns how many were taken."""
        if self._db is None:
            return 0
        taken = 0
        with _quiet():
            rows = self._db.execute("SELECT source, size, mtime, hash FROM marks").fetchall()
            for source, size, mtime, content_hash in rows:
                if stored.get(source) == content_hash:
                    self._marks[source] = (size, mtime)
                    taken += 1
        return taken

    def record(
        self,
        taken: Mapping[str, Mark | None],
        hashes: Mapping[str, str],
        failed: Iterable[str] = (),
    ) -> None:
        """Remember the marks of files read (taken before they were read, so a write made
        meanwhile is seen again) with their documents' content hashes (`hashes`, by
        source); files that failed, or whose document is not known, are read next time."""
        keep, drop = [], list(failed)
        for source, mark in taken.items():
            if mark is None or source not in hashes:
                drop.append(source)
            else:
                self._marks[source] = mark
                keep.append((source, mark[0], mark[1], hashes[source]))
        for source in drop:
            self._marks.pop(source, None)
        if self._db is not None:
            with _quiet(), self._db:
                self._db.executemany("INSERT OR REPLACE INTO marks VALUES (?, ?, ?, ?)", keep)
                self._db.executemany("DELETE FROM marks WHERE source = ?", [(s,) for s in drop])

    def forget(self, sources: Iterable[str]) -> None:
        gone = [s for s in sources]
        for source in gone:
            self._marks.pop(source, None)
        if self._db is not None and gone:
            with _quiet(), self._db:
                self._db.executemany("DELETE FROM marks WHERE source = ?", [(s,) for s in gone])

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """The marks file is a cache: a failure to use it is logged, never raised."""
    try:
        yield
    except sqlite3.Error as exc:
        log.debug("the watcher's marks file could not be used: %s", exc)


def _open(path: Path) -> sqlite3.Connection | None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute(
            "CREATE TABLE IF NOT EXISTS marks (source TEXT PRIMARY KEY, size INTEGER NOT NULL,"
            " mtime INTEGER NOT NULL, hash TEXT NOT NULL)"
        )
        db.isolation_level = "DEFERRED"  # transactions by `with db`
        return db
    except (OSError, sqlite3.Error) as exc:
        log.debug("no marks file (%s): a new watcher reads every file once", exc)
        return None
