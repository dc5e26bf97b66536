"""The rules that leave a file a folder walk meets out, named (so it is counted, never
dropped unseen): hidden names, scratch files and `.gitignore` (`ragloom.loading.ignore`),
the include/exclude globs, then the default rules by kind (`ragloom.loading.kinds`). The
walk (`ragloom.loading.files`) and the watcher (`ragloom.watch.paths`) ask the same
`rule_for`, so a file is taken or left out the same way however it is met."""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence

from ragloom.loading.ignore import FolderRules
from ragloom.loading.kinds import left_out_kind


def matches(rel: str, patterns: Sequence[str]) -> bool:
    """Whether a glob matches the path `rel`, its file name, or a path ending in it."""
    name = rel.rsplit("/", 1)[-1]
    return any(
        fnmatch.fnmatch(rel, p) or fnmatch.fnmatch(name, p) or fnmatch.fnmatch(rel, f"*/{p}")
        for p in patterns
    )


def rule_for(
    rel: str, include: Sequence[str], exclude: Sequence[str], rules: FolderRules | None = None
) -> str | None:
    """The rule that leaves the file at `rel` (relative to the folder walked) out, or None
    to take it: a hidden name, a scratch file or a `.gitignore` (`rules`), the globs, then
    the default rules (`loading.kinds`). The walk and the watcher ask this one function."""
    filename = rel.rsplit("/", 1)[-1]
    if filename.startswith("."):
        return "hidden file"
    if rules is not None and (reason := rules.skips_file(rel, walked=True)):
        return reason
    if include and not matches(rel, include):
        return "not matched by --include"
    if exclude and matches(rel, exclude):
        return "matched by --exclude"
    if not include and (kind := left_out_kind(filename)):
        return f"{kind} (left out by default)"
    return None
