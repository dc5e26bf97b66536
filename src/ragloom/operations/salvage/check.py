"""`ragloom check` and `ragloom check --repair` as library verbs.

`check_index` runs the store's own consistency check; when SQLite cannot read the file as a
whole (a damaged page, a damaged header), it reads what it can page by page instead and
reports the damage. `repair_index` writes a new index from everything readable: from the
damaged file as it is, or, when SQLite still reads it (damaged segment files), from a
consistent backup taken first. Neither ever writes to the index it checks.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragloom.errors import StoreError
from ragloom.operations.salvage.assess import Salvage, assess
from ragloom.operations.salvage.rebuild import RepairReport, rebuild
from ragloom.store.open import is_url, open_store

REPAIR_HINT = (
    "run `ragloom check --repair` to write a new index from everything readable "
    "(the damaged index is not changed)"
)


@dataclass
class CheckReport:
    """Problems found, and what a page scan found when SQLite could not read the file."""

    location: str
    problems: list[str]
    salvage: Salvage | None = None

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "index": self.location,
            "problems": self.problems,
            "damage": self.salvage.to_dict() if self.salvage else None,
        }


def check_index(location: str | Path) -> CheckReport:
    """Check the index at `location`; a damaged file is read page by page, never written."""
    if is_url(location):
        store = open_store(location, create=False, read_only=True)
        try:
            return CheckReport(store.location, store.check())
        finally:
            store.close()
    path = Path(location)
    try:
        store = open_store(path, create=False, read_only=True)
        try:
            problems = store.check()
        finally:
            store.close()
    except StoreError as exc:
        if not path.is_file():
            raise
        return _scanned(path, [exc.message], exc)
    except (sqlite3.DatabaseError, ValueError, KeyError, IndexError) as exc:
        # a damaged page that SQLite hands back as data (an overflow page has no header to
        # check): the values it holds do not decode
        return _scanned(path, [f"{path} is damaged ({type(exc).__name__}: {exc})"], None)
    if any(p.startswith("sqlite:") for p in problems):
        return _scanned(path, problems, None)
    return CheckReport(str(path), problems)


def _scanned(path: Path, problems: list[str], error: StoreError | None) -> CheckReport:
    salvage = assess(path)
    found = salvage.recovered
    if error is not None and not any(found.rows[t] for t in ("collections", "documents", "chunks")):
        raise error  # not a damaged ragloom index: nothing of ours is in it
    return CheckReport(str(path), problems + damage_lines(salvage), salvage)


def damage_lines(salvage: Salvage) -> list[str]:
    """The damage in words, one finding a line."""
    found = salvage.recovered
    lines = []
    if not found.header_ok:
        lines.append("page 1 (the file header and the list of tables) is damaged")
    tables = ", ".join(f"{t} {n}" for t, n in sorted(found.lost_in.items()))
    lines.append(
        f"{len(found.unreadable)} of {found.pages} pages cannot be read"
        + (f" (damaged pages of: {tables})" if tables else "")
        + f"; {found.found_by_scan} rows were found only by scanning every page"
    )
    for name, collection in sorted(salvage.collections.items()):
        lost = sorted(collection.lost)
        shown = ", ".join(lost[:10]) + (" ..." if len(lost) > 10 else "")
        line = f"collection {name!r}: {len(collection.documents)} documents readable whole"
        line += f", {len(lost)} lost ({shown})" if lost else ", none lost"
        if collection.vectors_lost:
            line += f"; {collection.vectors_lost} of their chunks lost their vectors"
        if collection.config is None:
            line += "; its settings are lost (default settings will be used)"
        lines.append(line)
    if salvage.unnamed_documents:
        lines.append(
            f"{salvage.unnamed_documents} documents lost whose ids were on damaged pages "
            "(some of their chunks remain)"
        )
    if salvage.missing_chunk_rows:
        lines.append(f"{salvage.missing_chunk_rows} chunks that segment files list are lost")
    for name, problem in sorted(salvage.segments.items()):
        lines.append(f"segment file {name} cannot be read ({problem})")
    return lines


def default_output(location: str | Path) -> Path:
    """Where a repair writes by default: `notes.db` -> `notes.repaired.db`."""
    path = Path(location)
    return path.with_name(f"{path.stem}.repaired{path.suffix or '.db'}")


def repair_index(
    location: str | Path, output: str | Path | None = None, embedder: Any = "auto"
) -> tuple[CheckReport, RepairReport]:
    """Check the index and write a new one at `output` from everything readable."""
    if is_url(location):
        raise StoreError(
            f"{location}: --repair salvages index files; PostgreSQL keeps its own integrity",
            "restore a backup (`ragloom restore`) into a new schema instead",
        )
    report = check_index(location)
    target = Path(output) if output else default_output(location)
    if report.salvage is not None:
        return report, rebuild(report.salvage, target, embedder)
    from ragloom.operations.backup import backup
    from ragloom.operations.staging import scratch_beside

    with scratch_beside(target) as folder:
        backup(location, folder / "copy")  # one consistent version to rebuild from
        return report, rebuild(assess(folder / "copy" / "index.db"), target, embedder)
