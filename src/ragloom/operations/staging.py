"""Writing a result under its final name only once it is complete: it is built under a
hidden name beside the destination and renamed into place at the end, so a crash (kill -9
included) leaves nothing under the destination name, and a leftover of a dead run is
removed by the next run that builds the same destination."""

from __future__ import annotations

import contextlib
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

from ragloom.errors import InputError
from ragloom.segments.files import fsync_folder

PARTIAL = ".partial-"


def staging_name(dest: Path) -> Path:
    """A hidden name beside `dest` that records which process builds it."""
    return dest.with_name(f".{dest.name}{PARTIAL}{os.getpid()}-{uuid.uuid4().hex[:8]}")


def remove_stale(dest: Path) -> list[Path]:
    """Remove what dead processes left while building `dest`; returns what was removed."""
    removed = []
    for entry in dest.parent.glob(f".{dest.name}{PARTIAL}*"):
        pid = entry.name.rsplit(PARTIAL, 1)[1].split("-")[0]
        if pid.isdigit() and not _alive(int(pid)):
            remove_path(entry)
            removed.append(entry)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_path(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def refuse_existing(dest: Path, what: str, hint: str) -> None:
    if dest.exists() or dest.is_symlink():
        raise InputError(f"{dest} already exists; {what} never writes over it", hint)
    if not dest.parent.is_dir():
        raise InputError(
            f"folder {dest.parent} does not exist", "create it or choose another destination"
        )


@contextlib.contextmanager
def staged_folder(dest: Path, what: str, hint: str) -> Iterator[Path]:
    """A fresh hidden folder to build `dest` in; renamed to `dest` when the block ends
    without an error, removed otherwise."""
    dest = Path(dest).absolute()
    refuse_existing(dest, what, hint)
    remove_stale(dest)
    tmp = staging_name(dest)
    tmp.mkdir()
    try:
        yield tmp
        sync_tree(tmp)
        refuse_existing(dest, what, hint)  # someone else made it meanwhile
        os.rename(tmp, dest)
        fsync_folder(dest.parent)
    except BaseException:
        remove_path(tmp)
        raise


def sync_tree(folder: Path) -> None:
    """Flush every file below `folder` and the folders themselves to disk."""
    for root, _, files in os.walk(folder):
        for name in files:
            fd = os.open(Path(root) / name, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        fsync_folder(Path(root))


@contextlib.contextmanager
def scratch_beside(dest: Path) -> Iterator[Path]:
    """A hidden folder beside `dest` (the same file system: what is built there moves into
    place by renaming), removed when the block ends."""
    dest = Path(dest).absolute()
    remove_stale(dest)
    tmp = staging_name(dest)
    tmp.mkdir()
    try:
        yield tmp
    finally:
        remove_path(tmp)
