"""Confine `/index` path requests to the configured roots (no `..` or symlink escapes)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from ragloom.errors import PathNotFound
from ragloom.loading import discover_files
from ragloom.server.errors import Forbidden

ENABLE_HINT = "start the server with --root DIR (repeatable) to allow indexing files under DIR"


def _inside(path: Path, roots: Sequence[Path]) -> bool:
    return any(path == root or path.is_relative_to(root) for root in roots)


def confine(
    raw: str,
    roots: Sequence[Path],
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
) -> Path:
    """The real path of `raw` if it and every file it would index lie under a root.

    Relative paths are taken from the server's working directory. Raises `Forbidden` when path
    indexing is off (no roots) or anything resolves outside the roots, `PathNotFound` when the
    path is allowed but missing.
    """
    if not roots:
        raise Forbidden("path indexing is disabled on this server", ENABLE_HINT)
    try:
        real = Path(os.path.realpath(Path(raw)))
        if not _inside(real, roots):
            raise Forbidden(
                f"{raw!r} is outside the folders this server may read",
                f"allowed roots: {', '.join(str(r) for r in roots)}",
            )
        if not real.exists():
            raise PathNotFound(f"no such file or folder: {raw!r}", "check the path and try again")
        if real.is_dir():
            for found in discover_files([real], include, exclude):
                target = Path(os.path.realpath(found.path))
                if not _inside(target, roots):
                    raise Forbidden(
                        f"{found.path} is a symlink to {target}, outside the allowed roots",
                        "remove the link or exclude it with an `exclude` glob",
                    )
    except (OSError, ValueError) as exc:  # NUL byte, name too long, ...: no such file
        raise PathNotFound(f"no usable file or folder at {raw!r} ({exc})") from None
    return real
