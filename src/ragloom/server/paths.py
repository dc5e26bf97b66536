"""Confine `/index` path requests to the configured roots, and show paths relative to them.

`confine` checks the path a request names (no `..`, `~` or link escapes); the files under it
are then discovered and opened by `ragloom.loading` with the roots as its policy, which
skips links leading outside and opens each file without following links. Paths going back
to a caller (`source`, the report's `file`, skipped and failed files) are relative to their
root: the server's own folders never show.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Sequence
from pathlib import Path

from ragloom.errors import FileChanged, PathNotFound
from ragloom.server.errors import Forbidden

ENABLE_HINT = "start the server with --root DIR (repeatable) to allow indexing files under DIR"
RESOLVE_TRIES = 3  # a path swapped (file <-> link) while resolved is tried this often


def _real_path(raw: str) -> Path:
    """`os.path.realpath`, again when a component changed between its lstat and readlink:
    EINVAL is a link that became a file mid-resolution (the path exists), not a missing
    path; if it keeps changing, FileChanged (409) asks the caller to try again."""
    for _ in range(RESOLVE_TRIES):
        try:
            return Path(os.path.realpath(Path(raw)))
        except OSError as exc:
            if exc.errno != errno.EINVAL:
                raise
    raise FileChanged(
        f"{raw!r} changed while its path was resolved (a file and a link were swapped)",
        "try again once the file stops changing",
    )


def _root_of(path: Path, roots: Sequence[Path]) -> Path | None:
    return next((r for r in roots if path == r or path.is_relative_to(r)), None)


def confine(raw: str, roots: Sequence[Path]) -> Path:
    """The real path of `raw` if it lies under a root.

    Relative paths are taken from the server's working directory. Raises `Forbidden` when path
    indexing is off (no roots) or the path resolves outside the roots, `PathNotFound` when the
    path is allowed but missing (or a link that leads nowhere).
    """
    if not roots:
        raise Forbidden("path indexing is disabled on this server", ENABLE_HINT)
    try:
        real = _real_path(raw)
        if _root_of(real, roots) is None:
            raise Forbidden(
                f"{raw!r} is outside the folders this server may read",
                f"allowed roots: {', '.join(str(r) for r in roots)}",
            )
        if not os.path.exists(real):
            what = "a symbolic link that leads nowhere" if os.path.lexists(raw) else "missing"
            raise PathNotFound(f"{raw!r} is {what}", "check the path and try again")
    except (OSError, ValueError) as exc:  # NUL byte, name too long, ...: no such file
        raise PathNotFound(f"no usable file or folder at {raw!r} ({exc})") from None
    return real


def public_path(path: str | None, roots: Sequence[Path]) -> str | None:
    """A path as callers see it: relative to its root; another absolute path by its name only."""
    if not path or not os.path.isabs(path):
        return path
    where = Path(path)
    root = _root_of(where, roots)
    if root is None:
        return where.name or path
    return where.relative_to(root).as_posix()
