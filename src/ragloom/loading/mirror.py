"""A folder's re-index mirrors the folder: the documents of its files that are gone, or that
the walk's rules now leave out, are removed, and nothing else.

Removal is decided file by file from the file system, never from an absence alone: a file
is removed when it no longer exists, or when it exists in a listable folder and the walk
did not take it (an include/exclude glob, a `.gitignore`, a scratch name). Nothing is
removed from a folder that cannot be listed, that is suddenly empty (an unmounted drive
leaves an empty mount point) or that sits on another device than when it was watched;
the outcome says why. Documents from elsewhere (other folders, records, the library, a
file named on its own) are never candidates.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ragloom.loading.files import FoundFile, shown

GONE = (errno.ENOENT, errno.ENOTDIR)


@dataclass
class MirrorOutcome:
    """Ids to remove, and why some (or all) documents of a folder were kept."""

    remove: list[str] = field(default_factory=list)
    held: list[str] = field(default_factory=list)

    def extend(self, other: MirrorOutcome) -> None:
        self.remove.extend(other.remove)
        self.held.extend(other.held)


def walked_folders(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """The real paths of the folders among `paths` (files named on their own mirror
    nothing, and so does a path that changed under a link while it was resolved)."""
    out = []
    for path in paths:
        try:
            if os.path.isdir(path):
                out.append(Path(os.path.realpath(path, strict=True)))
        except OSError:  # swapped while it was looked at: removing nothing is safe
            continue
    return out


def kept_sources(files: Iterable[FoundFile]) -> set[str]:
    """Sources a run took or tried (a file that failed to read keeps its documents; one the
    rules left out does not)."""
    return {f.source for f in files if f.skip is None and f.left_out is None}


def folder_hold(
    folder: Path, stored: int, device: int | None = None, trust_empty: bool = False
) -> str | None:
    """Why nothing may be removed from `folder` now (None: the folder can be trusted).
    `trust_empty`: an empty folder is taken as emptied (the OS said each file went)."""
    name = shown(folder)
    try:
        info = os.stat(folder)
        entries = os.listdir(folder)
    except FileNotFoundError:
        return f"{name} is missing: nothing removed from the index"
    except OSError as exc:
        return f"{name} cannot be listed ({exc.strerror or exc}): nothing removed"
    if device is not None and info.st_dev != device:
        return f"{name} is on another device than before (unmounted?): nothing removed"
    if not entries and stored and not trust_empty:
        return (
            f"{name} is empty but {stored} document(s) came from it (an unmounted drive?):"
            " nothing removed; delete them with `ragloom delete` if the folder was emptied"
        )
    return None


def _listable(folder: Path, top: Path, cache: dict[Path, bool]) -> bool:
    """True when every folder from `top` down to `folder` can be listed."""
    if folder in cache:
        return cache[folder]
    ok = os.access(folder, os.R_OK | os.X_OK)
    if ok and folder != top and folder.is_relative_to(top):
        ok = _listable(folder.parent, top, cache)
    cache[folder] = ok
    return ok


def _named_on_its_own(doc_id: str, source: str) -> bool:
    return doc_id == source or doc_id.startswith(source + "#")


def plan_removals(
    folder: Path,
    stored: Mapping[str, str],
    kept: set[str],
    device: int | None = None,
    trust_empty: bool = False,
) -> MirrorOutcome:
    """Which of `stored` (id -> source, the file documents under `folder`) to remove, given
    the sources the walk `kept` (`device`, `trust_empty`: as `folder_hold` takes them)."""
    outcome = MirrorOutcome()
    candidates = {i: s for i, s in stored.items() if s not in kept}
    if not candidates:
        return outcome
    hold = folder_hold(folder, len(stored), device, trust_empty)
    if hold is not None:
        outcome.held.append(hold)
        return outcome
    listable: dict[Path, bool] = {}
    for doc_id, source in sorted(candidates.items()):
        try:
            os.lstat(source)
        except OSError as exc:
            if exc.errno in GONE:
                outcome.remove.append(doc_id)
            continue  # cannot tell (permissions, I/O): kept
        if _named_on_its_own(doc_id, source):
            continue
        if _listable(Path(source).parent, folder, listable):
            outcome.remove.append(doc_id)  # there, but the walk's rules leave it out now
    return outcome


class StoredFiles(Protocol):
    """What the mirror needs from the store: the file documents under a folder."""

    def under(self, folder: str) -> dict[str, str]:
        """id -> source of the file documents (and parts) whose source lies under `folder`."""
        ...


def mirror_folders(
    stored: StoredFiles,
    paths: Iterable[str | os.PathLike[str]],
    found: Iterable[FoundFile],
    devices: Mapping[Path, int] | None = None,
) -> MirrorOutcome:
    """The removals that make the index mirror the folders among `paths` after a walk that
    `found` these files (`devices`: the device each folder was on when watching began)."""
    outcome = MirrorOutcome()
    folders = walked_folders(paths)
    if not folders:
        return outcome
    kept = kept_sources(found)
    for folder in folders:
        device = (devices or {}).get(folder)
        outcome.extend(plan_removals(folder, stored.under(shown(folder)), kept, device))
    return outcome
