"""From paths the OS named to files to index and paths gone, by the rules of the folder's walk.

A watched folder is walked and filtered exactly as `ragloom index FOLDER` walks it (hidden
files, scratch files, `.gitignore`, include/exclude globs, supported formats: the same
functions of `ragloom.loading`), and its files get the same document ids, so a file reaches
the index the same way whether it was walked or named by an event.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from ragloom.errors import PathNotFound
from ragloom.loading.files import FoundFile, discover_files, shown
from ragloom.loading.ignore import FolderRules
from ragloom.loading.opening import ReadPolicy
from ragloom.loading.rules import rule_for


@dataclass(frozen=True)
class WalkOptions:
    """How a watched folder is walked and read (as `ragloom index` takes them)."""

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    lenient: bool = False
    include_ignored: bool = False
    policy: ReadPolicy = field(default_factory=ReadPolicy)


class Folder:
    """A watched folder: its real path, the device it is on, its walk's rules."""

    def __init__(self, path: str | os.PathLike[str], options: WalkOptions) -> None:
        self.real = Path(os.path.realpath(path))
        info = os.stat(self.real)
        if not stat.S_ISDIR(info.st_mode):
            raise NotADirectoryError(f"{shown(self.real)} is not a folder")
        self.device = info.st_dev
        self.options = options
        self.rules = FolderRules(self.real, gitignore=not options.include_ignored)
        roots = options.policy.roots or (self.real,)  # ids relative to the folder (or root)
        self.policy = replace(options.policy, roots=roots)

    @property
    def shown(self) -> str:
        return shown(self.real)

    def relative(self, path: str) -> str | None:
        """`path` relative to the folder (forward slashes), None when outside it."""
        try:
            rel = Path(path).relative_to(self.real).as_posix()
        except ValueError:
            return None
        return rel

    def walk(self) -> list[FoundFile]:
        """Every file the folder's walk meets (taken, skipped or failed)."""
        o = self.options
        return discover_files(
            [self.real], o.include, o.exclude, self.policy, o.lenient, o.include_ignored
        )

    def takes(self, rel: str) -> bool:
        """Whether the walk takes the file at `rel` (hidden, scratch, ignored, the globs and
        the default rules)."""
        if any(part.startswith(".") for part in rel.split("/")):
            return False
        if self.rules.skips_file(rel) is not None:
            return False
        return rule_for(rel, self.options.include, self.options.exclude) is None

    def found(self, paths: Sequence[str]) -> tuple[list[FoundFile], list[str]]:
        """The files at `paths` (taken by the walk's rules) as the walk would find them, and
        the paths that vanished meanwhile."""
        try:
            return self._discover(paths), []
        except PathNotFound:  # one vanished since it was looked at: one by one
            found, vanished = [], []
            for path in paths:
                try:
                    found += self._discover([path])
                except PathNotFound:
                    vanished.append(path)
            return found, vanished

    def _discover(self, paths: Sequence[str]) -> list[FoundFile]:
        return discover_files(paths, (), (), self.policy, self.options.lenient) if paths else []


@dataclass
class Sorting:
    """What the paths of a batch come to for one folder."""

    found: list[FoundFile] = field(default_factory=list)  # files to index (or try to)
    gone: set[str] = field(default_factory=set)  # real paths gone, or now left out
    walk: bool = False  # a folder appeared, or the rules changed: walk the whole folder


def sort_paths(folder: Folder, paths: Iterable[str]) -> Sorting:
    """Files to index and paths gone, among changed `paths` of `folder`."""
    out = Sorting()
    files: list[str] = []
    for path in paths:
        rel = folder.relative(path)
        if rel is None:
            continue
        if rel == "." or rel.rsplit("/", 1)[-1] == ".gitignore":
            if rel != ".":
                folder.rules.forget(folder.real.joinpath(rel).parent)
            out.walk = True  # the folder itself changed, or the rules did
            continue
        try:
            info = os.stat(path)
        except OSError:
            out.gone.add(path)  # gone (or unreadable: the mirror keeps what it cannot tell)
            continue
        if stat.S_ISDIR(info.st_mode):
            out.walk = True  # a folder created or moved in: its files came with it
        elif folder.takes(rel):
            files.append(path)
        else:
            out.gone.add(path)  # there, but the rules leave it out (renamed to a .tmp, say)
    out.found, vanished = folder.found(sorted(files))
    out.gone.update(vanished)
    return out


def candidates(stored: Mapping[str, str], gone: set[str]) -> dict[str, str]:
    """The stored documents (id -> source) whose file is one of `gone` or lies under one."""
    out = {}
    for doc_id, source in stored.items():
        path = source
        while path and path != "/":
            if path in gone:
                out[doc_id] = source
                break
            path = os.path.dirname(path)
    return out
