"""Salvage of a damaged index file: `check` reports what is damaged, `check --repair` writes a
new index holding every document whose rows are intact, equal to a clean build of them, and
lists the rest; the damaged file is never written to."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ragloom import Index
from ragloom.errors import StoreError
from ragloom.operations.salvage import check_index, repair_index
from ragloom.operations.salvage.pages import INTERIOR_TABLE, open_pages, page_kind
from ragloom.operations.salvage.rows import _roots, recover

from .index_state import contents, searches

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def original(tmp_path_factory) -> Path:
    """The project's docs with the local model's vectors, partly in segment files."""
    path = tmp_path_factory.mktemp("orig") / "docs.db"
    with Index(path, embedder="local") as index:
        index.index_path(str(ROOT / "docs"))
        index.store.maintenance.flush_rows = 150
        index.optimize()
    return path


def damaged_copy(original: Path, folder: Path, pages: list[int]) -> Path:
    """A copy of the index with the given pages overwritten by random bytes."""
    path = folder / "damaged.db"
    shutil.copyfile(original, path)
    shutil.copytree(original.with_name(original.name + "-segments"), folder / "damaged.db-segments")
    size = open_pages(path).page_size
    with open(path, "r+b") as handle:
        for number in pages:
            handle.seek((number - 1) * size)
            handle.write(os.urandom(size))
    return path


def intact_documents(original: Path, damaged: set[int]) -> set[str]:
    """Documents none of whose rows (document row, chunk rows, their overflow pages) lies on
    a damaged page: what a repair must recover."""
    found = recover(original)
    pages = found.cell_pages
    out = set()
    for row, values in found.rows["documents"].items():
        mine = set(pages[("documents", row)])
        for chunk, chunk_values in found.rows["chunks"].items():
            if chunk_values[2] == row:
                mine |= set(pages[("chunks", chunk)])
        if not mine & damaged:
            out.add(values[2])
    return out


def leaf_pages(original: Path, table: str) -> list[int]:
    found = recover(original)
    return sorted({p[0] for (t, _), p in found.cell_pages.items() if t == table})


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def clean_build(documents_of: Path, folder: Path) -> Path:
    """A fresh index of the documents the repaired index holds (same settings, embedded
    from scratch)."""
    path = folder / "clean.db"
    with Index(documents_of) as repaired, Index(path, embedder="local") as clean:
        for name in repaired.collections():
            config = repaired.store.collections()[name].config
            with clean.store.write() as write:
                write.set_config(write.ensure_collection(name, config), config)
        for batch in repaired.store.export("default"):
            clean.add([new.document for new in batch])
    return path


@pytest.mark.parametrize("where", ["chunk and document leaves", "page 1", "an interior page"])
def test_repair_recovers_every_intact_document(original, tmp_path, where) -> None:
    if where == "page 1":
        pages = [1]
    elif where == "an interior page":
        root = _roots(open_pages(original))["chunks"]
        assert page_kind(open_pages(original), root)[0] == INTERIOR_TABLE
        pages = [root]
    else:
        pages = [leaf_pages(original, "chunks")[3], leaf_pages(original, "documents")[0]]
    path = damaged_copy(original, tmp_path, pages)
    before = digest(path)
    expected = intact_documents(original, set(pages))

    report = check_index(path)
    assert not report.ok and report.salvage is not None
    salvage = report.salvage
    recovered = {d.id for c in salvage.collections.values() for d in c.documents}
    assert recovered == expected
    every = {doc for _, doc in contents(original)}
    lost = {doc for _, doc in salvage.lost_documents()}  # named by their row or unique index
    assert lost == every - expected and salvage.unnamed_documents == 0
    if where == "page 1":
        assert any("page 1" in p for p in report.problems)

    _, repaired = repair_index(path, tmp_path / "repaired.db", embedder="local")
    assert digest(path) == before  # the damaged file was only read
    assert repaired.documents == len(expected) and repaired.embedded == 0  # vectors reused
    with Index(tmp_path / "repaired.db") as index:
        assert index.check() == []
    got = contents(tmp_path / "repaired.db")
    assert {doc for _, doc in got} == expected
    full = contents(original)
    assert all(got[key] == full[key] for key in got)  # as they were, vectors included
    if where == "chunk and document leaves":  # (the slow suite does this on SciFact, 20 times)
        clean = clean_build(tmp_path / "repaired.db", tmp_path)
        with Index(tmp_path / "repaired.db") as a, Index(clean) as b:
            assert searches(a) == searches(b)


def test_a_healthy_index_with_a_damaged_segment_file(original, tmp_path) -> None:
    path = damaged_copy(original, tmp_path, [])
    segment = sorted((tmp_path / "damaged.db-segments").glob("*.seg"))[0]
    segment.write_bytes(b"RGLMSEG1" + b"\0" * 20)
    report = check_index(path)
    assert not report.ok and any("cannot load its segments" in p for p in report.problems)
    before = digest(path)
    _, repaired = repair_index(path, tmp_path / "repaired.db", embedder="local")
    assert digest(path) == before
    assert contents(tmp_path / "repaired.db").keys() == contents(original).keys()
    assert repaired.embedded > 0  # the vectors that lived only in that file were computed again


def test_a_file_that_is_not_an_index_is_still_refused(tmp_path) -> None:
    (tmp_path / "x.db").write_bytes(os.urandom(8192))
    with pytest.raises(StoreError, match="not a ragloom index"):
        check_index(tmp_path / "x.db")


def test_the_commands_on_the_issue_case(original, tmp_path) -> None:
    """8 KB of a copy overwritten: search's hint names a command that works; check prints
    JSON; check --repair writes the new index."""
    path = damaged_copy(original, tmp_path, leaf_pages(original, "chunks")[5:7])

    def ragloom(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "ragloom", "--index", str(path), *args],
            capture_output=True,
            text=True,
            timeout=300,
        )

    search = ragloom("context", "chunk ids", "--mode", "lexical", "--top-k", "30")
    if search.returncode:
        assert "ragloom check --repair" in search.stderr
    checked = ragloom("check", "--json")
    assert checked.returncode == 1 and "Traceback" not in checked.stderr, checked.stderr
    damage = json.loads(checked.stdout)
    assert damage["ok"] is False and damage["damage"]["unreadable_pages"] == 2
    assert damage["damage"]["collections"]["default"]["lost_documents"]
    text = ragloom("check")
    assert "lost (" in text.stdout and "check --repair" in text.stderr
    repaired = ragloom("check", "--repair")
    assert "repaired: wrote" in repaired.stdout and "lost: default " in repaired.stdout
    assert (tmp_path / "damaged.repaired.db").is_file()
    again = ragloom("check", "--repair")
    assert again.returncode == 1 and "already exists" in again.stderr


def test_random_damage_never_breaks_the_check(original, tmp_path) -> None:
    """Whatever pages are overwritten, check reports (or finds nothing wrong); it never fails."""
    import random

    rng = random.Random(28)
    count = open_pages(original).count
    for trial in range(12):
        folder = tmp_path / str(trial)
        folder.mkdir()
        pages = rng.sample(range(1, count + 1), rng.choice([1, 3, 8]))
        report = check_index(damaged_copy(original, folder, pages))
        assert report.problems or report.ok
