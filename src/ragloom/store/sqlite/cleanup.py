"""Removing segment and graph files nobody reads any more: files merged away long enough ago
(readers of older versions may still map them for `RETIRED_GRACE` seconds) and files no
manifest lists (left by a crash mid-step, once `ORPHAN_AGE` old)."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

from ragloom.errors import StoreError
from ragloom.store.sqlite.database import SQLiteDatabase

RETIRED_GRACE = 60.0  # seconds a merged-away file stays for readers of older versions
ORPHAN_AGE = 600.0  # files not in the manifest are removed once this old


def clean_files(store: SQLiteDatabase) -> None:
    """Delete files merged away long enough ago, and files no manifest lists."""
    folder: Path = store.files.folder
    if not folder.is_dir():
        return
    now = time.time()
    with store.snapshot() as snap:
        listed = {
            name: retired_at
            for name, retired_at in snap.conn.execute("SELECT name, retired_at FROM segments")
        }
    expired = [n for n, at in listed.items() if at is not None and now - at > RETIRED_GRACE]
    for entry in folder.iterdir():
        name = entry.name.split(".")[0]
        try:
            age = now - entry.stat().st_mtime
        except OSError:
            continue
        orphan = name not in listed and age > ORPHAN_AGE
        if name in expired or orphan:
            with contextlib.suppress(OSError):
                entry.unlink()
    if expired:
        try:
            with store.write() as write:
                write.conn.executemany(
                    "DELETE FROM segments WHERE name = ?", [(n,) for n in expired]
                )
        except StoreError:
            pass
