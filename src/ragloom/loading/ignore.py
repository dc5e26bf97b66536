"""What a folder walk leaves out besides the include/exclude globs: editors' scratch files and
what a `.gitignore` ignores.

Scratch files (swap, backup and lock files, partial downloads, desktop litter) are never the
user's material and are never indexed from a folder, whatever the globs say. Files that a
`.gitignore` in the folder (or above it, up to the top of its git work tree) ignores are
left out too, unless the caller asks for them (`include_ignored`). The folder walk
(`ragloom.loading.files`) and the watcher (`ragloom.watch`) ask the same `FolderRules`, so a
file is taken or left out the same way however it is met.
"""

from __future__ import annotations

import os
from pathlib import Path

from pathspec import GitIgnoreSpec

SCRATCH_SUFFIXES = (
    ".swp",  # vim swap files (and the next ones it makes)
    ".swo",
    ".swx",
    ".swn",
    ".kate-swp",
    ".tmp",
    ".temp",
    ".bak",
    ".part",  # partial downloads: Firefox, Chrome, Edge/IE, Safari
    ".crdownload",
    ".partial",
    ".download",
    "___jb_tmp___",  # JetBrains safe-write temporaries
    "___jb_old___",
)
SCRATCH_NAMES = frozenset({".DS_Store", "Thumbs.db", "desktop.ini", "4913"})  # 4913: vim's probe


def scratch_reason(name: str) -> str | None:
    """Why a file name is an editor's or the system's scratch file (None: it is not)."""
    lowered = name.lower()
    if name in SCRATCH_NAMES:
        return "a system or editor scratch file"
    if name.endswith("~") or lowered.endswith(SCRATCH_SUFFIXES):
        return "a swap, backup or temporary file"
    if (name.startswith("#") and name.endswith("#")) or name.startswith((".#", "~$", ".~lock.")):
        return "an editor's autosave or lock file"
    return None


def _work_tree_top(folder: Path) -> Path | None:
    """The top of the git work tree holding `folder` (the nearest folder with `.git`)."""
    for candidate in (folder, *folder.parents):
        if os.path.lexists(candidate / ".git"):
            return candidate
    return None


class FolderRules:
    """Scratch files and `.gitignore` rules for the walk of one folder (`top`).

    Paths are given relative to `top`, with forward slashes. `.gitignore` files are read
    once per folder and kept; `forget(folder)` drops one that changed (the watcher does).
    """

    def __init__(self, top: Path, gitignore: bool = True) -> None:
        self.top = Path(top)
        self.gitignore = gitignore
        self._specs: dict[Path, GitIgnoreSpec | None] = {}
        # Folders above `top` whose .gitignore also applies, with `top`'s path from each.
        self._above: list[tuple[Path, tuple[str, ...]]] = []
        if gitignore:
            try:
                real = self.top.resolve()
            except OSError:  # a link on the way changed meanwhile: its own rules only
                return
            tree = _work_tree_top(real)
            if tree is not None:
                self._above = [
                    (p, real.relative_to(p).parts)
                    for p in reversed(real.parents)
                    if p.is_relative_to(tree)
                ]
                if self._ignored((), True):  # the folder named is itself ignored: asked for
                    self._above = []

    def forget(self, folder: Path) -> None:
        """Read `folder`'s `.gitignore` again when next needed (it was edited)."""
        self._specs.pop(Path(folder), None)

    def _spec(self, folder: Path) -> GitIgnoreSpec | None:
        if folder not in self._specs:
            try:
                lines = (folder / ".gitignore").read_text("utf-8", "replace").splitlines()
                self._specs[folder] = GitIgnoreSpec.from_lines(lines)
            except OSError:  # none there, or unreadable: nothing ignored by it
                self._specs[folder] = None
        return self._specs[folder]

    def _ignored(self, parts: tuple[str, ...], is_dir: bool) -> bool:
        """Whether git would ignore the path `top/parts...` (a deeper rule wins)."""
        verdict = None
        chains = [(folder, (*down, *parts)) for folder, down in self._above]
        chains += [(self.top.joinpath(*parts[:d]), parts[d:]) for d in range(len(parts))]
        for folder, rest in chains:
            spec = self._spec(folder)
            if spec is None:
                continue
            path = "/".join(rest) + ("/" if is_dir else "")
            result = spec.check_file(path).include
            if result is not None:
                verdict = result
        return bool(verdict)

    def skips_folder(self, rel: str) -> bool:
        """True when nothing under the folder `rel` is to be walked (a `.gitignore` says so)."""
        return self.gitignore and self._ignored(tuple(rel.split("/")), True)

    def skips_file(self, rel: str, walked: bool = False) -> str | None:
        """Why the file `rel` is left out (scratch, or ignored by a `.gitignore`), or None.
        `walked`: its folders were already checked (a walk prunes what `skips_folder` says)."""
        parts = tuple(rel.split("/"))
        reason = scratch_reason(parts[-1])
        if reason is not None:
            return reason
        if not self.gitignore:
            return None
        for depth in range(1, 1 if walked else len(parts)):
            if self._ignored(parts[:depth], True):
                return "in a folder a .gitignore ignores"
        if self._ignored(parts, False):
            return "ignored by a .gitignore"
        return None
