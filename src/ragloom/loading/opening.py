"""Open a file so that what is read is what was checked, and read it within limits.

A file is opened from its root folder one path component at a time, each with
`O_NOFOLLOW`: if any component was swapped for a symbolic link after the path was checked,
the open fails instead of reaching outside the root. The descriptor must then be a regular
file (a FIFO or device swapped in is never read: it is opened non-blocking and refused),
and reads stop at the size the file had when opened, at the maximum file size and at the
read time limit, so a file growing while it is read cannot grow memory without bound.
"""

from __future__ import annotations

import errno
import os
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ragloom.errors import FileChanged, FileRefused, FileTooLarge, InputError, ReadTimeout
from ragloom.loading.parts import DEFAULT_PART_CHARS

DEFAULT_MAX_FILE_SIZE = 256 * 1024 * 1024  # 256 MiB
BLOCK = 1024 * 1024

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_FILE_FLAGS = (
    os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | _CLOEXEC
)
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _CLOEXEC
_WALK = os.open in os.supports_dir_fd and bool(_NOFOLLOW)


@dataclass(frozen=True)
class ReadPolicy:
    """How files are read.

    `roots`: real folders every file must lie in (the server's `--root`s); document ids and
    the paths shown are then relative to the root a file lies in. `allow_hardlinks`: read
    files that have other hard links (a link inside a root may name a file outside it).
    `max_file_size`: bytes (0: no limit). `read_timeout`: seconds per file (None: none).
    `part_chars`: a text file longer than this is indexed in parts (`loading.parts`).
    `convert_timeout`: seconds one PDF, Word file, ... may take to convert (then it is
    stopped and named).
    """

    roots: tuple[Path, ...] = ()
    allow_hardlinks: bool = True
    max_file_size: int = DEFAULT_MAX_FILE_SIZE
    read_timeout: float | None = None
    part_chars: int = DEFAULT_PART_CHARS
    convert_timeout: float = 120.0


DEFAULT_POLICY = ReadPolicy()


def kind_of(mode: int) -> str:
    """A file type in words, for messages (`FIFO`, `socket`, `device`...)."""
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    if stat.S_ISDIR(mode):
        return "folder"
    return "special file"


class NotRegular(Exception):
    """The path turned out not to be a regular file: it is skipped, not failed."""


def _open_below(root: Path, parts: tuple[str, ...]) -> int:
    """Open root/parts[0]/.../parts[-1] following no link below `root`."""
    fd = os.open(root, _DIR_FLAGS)
    try:
        for part in parts[:-1]:
            nxt = os.open(part, _DIR_FLAGS | _NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = nxt
        return os.open(parts[-1], _FILE_FLAGS, dir_fd=fd)
    finally:
        os.close(fd)


def open_checked(real: Path, root: Path, shown: str) -> int:
    """A read-only descriptor of the regular file at `real` (a real path under `root`).

    Raises `FileChanged` when a component became a link (or vanished) since it was checked,
    `NotRegular` when it is no longer a regular file, `InputError` when it cannot be read.
    """
    try:
        if _WALK:
            fd = _open_below(root, real.relative_to(root).parts)
        else:  # no openat(): open, then check the descriptor is the file that was checked
            fd = os.open(real, _FILE_FLAGS)
            if not os.path.samestat(os.fstat(fd), os.stat(real)):
                os.close(fd)
                raise FileChanged(f"{shown} changed while it was being opened; not read")
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
            raise FileChanged(
                f"{shown}: a symbolic link appeared in its path while it was being opened;"
                " not read",
                "index it again once the folder is stable",
            ) from None
        if exc.errno == errno.ENOENT:
            raise FileChanged(f"{shown} disappeared before it could be read") from None
        raise InputError(
            f"cannot read {shown}: {exc.strerror or exc}", "check the file's permissions"
        ) from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise NotRegular(f"not a regular file ({kind_of(info.st_mode)})")
    return fd


class OpenFile:
    """An open regular file: checks the policy on open, reads blocks within its limits."""

    def __init__(self, real: Path, root: Path, shown: str, policy: ReadPolicy) -> None:
        self.shown = shown
        self.policy = policy
        self.fd = open_checked(real, root, shown)
        try:
            self.info = os.fstat(self.fd)
            self._check_policy()
        except BaseException:
            os.close(self.fd)
            raise
        self.size = self.info.st_size
        self._deadline = (
            time.monotonic() + policy.read_timeout if policy.read_timeout is not None else None
        )

    def _check_policy(self) -> None:
        links = self.info.st_nlink
        if links > 1 and not self.policy.allow_hardlinks:
            raise FileRefused(
                f"{self.shown} has {links} hard links; refused (a hard link can make a file"
                " from outside the allowed folders look like one inside)",
                "remove the extra links, or start the server with --allow-hardlinks",
            )
        limit = self.policy.max_file_size
        if limit and self.info.st_size > limit:
            raise FileTooLarge(
                f"{self.shown} is {self.info.st_size:,} bytes, over the {limit:,}-byte limit",
                "raise the limit with --max-file-size (0: no limit)",
            )

    def first_block(self) -> bytes:
        """The first block (for sniffing); `blocks_after_first` goes on from there."""
        self._stream = self.blocks()
        return next(self._stream, b"")

    def blocks_after_first(self) -> Iterator[bytes]:
        return self._stream

    def blocks(self, size: int = BLOCK) -> Iterator[bytes]:
        """The file's bytes in blocks, at most the size it had when opened."""
        left = self.size
        while left > 0:
            if self._deadline is not None and time.monotonic() > self._deadline:
                raise ReadTimeout(
                    f"reading {self.shown} took longer than {self.policy.read_timeout:g} s",
                    "check the file system it is on, or raise --read-timeout",
                )
            try:
                block = os.read(self.fd, min(size, left))
            except BlockingIOError:  # cannot happen for a regular file; never spin on it
                raise FileChanged(f"{self.shown} stopped being a regular file") from None
            except OSError as exc:
                raise InputError(f"cannot read {self.shown}: {exc.strerror or exc}") from None
            if not block:
                break
            left -= len(block)
            yield block

    def check_unchanged(self) -> None:
        """Raise `FileChanged` when the file was written to while it was read."""
        now = os.fstat(self.fd)
        if (now.st_size, now.st_mtime_ns) != (self.info.st_size, self.info.st_mtime_ns):
            raise FileChanged(
                f"{self.shown} changed while it was being read",
                "index it again once it is no longer being written",
            )

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> OpenFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
