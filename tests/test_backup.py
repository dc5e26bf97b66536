"""Backup and restore, export and import: on both stores, a copy equals the index it was
taken from (documents, chunks, terms, vectors, search results), taken while writes go on;
nothing is ever written over an existing index, backup or file."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ragloom import Document, Index
from ragloom.errors import InputError
from ragloom.operations import backup, restore
from ragloom.operations.jsonl import export_jsonl, import_jsonl
from ragloom.store.migrate import migrate

from .index_state import contents, searches

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    """An index with vectors of the local model, part of it in segment files, a deletion
    recorded against a segment, and a second collection."""
    path = tmp_path_factory.mktemp("source") / "source.db"
    with Index(path, embedder="local") as index:
        index.index_path(str(ROOT / "docs"))
        index.store.maintenance.flush_rows = 100
        index.optimize()
        index.delete("hybrid.md")
        notes = [
            Document(f"n{i}", f"note {i}: the archive door opens at dawn {i}") for i in range(9)
        ]
        index.add(notes, collection="notes")
    assert any((path.parent / "source.db-segments").glob("*.seg"))
    return path


def _equal(a, b, scores: bool = True) -> None:
    assert contents(a) == contents(b)
    with Index(a) as x, Index(b) as y:
        first, second = searches(x), searches(y)
        if not scores:
            first = {k: [c for c, _ in v] for k, v in first.items()}
            second = {k: [c for c, _ in v] for k, v in second.items()}
        assert first == second
        assert y.check() == []


def test_backup_then_restore_gives_an_equal_index(source: Path, tmp_path: Path) -> None:
    manifest = backup(source, tmp_path / "b1")
    assert manifest.store == "sqlite" and manifest.collections["notes"]["documents"] == 9
    assert (tmp_path / "b1" / "ragloom-backup.json").is_file()
    with Index(tmp_path / "b1" / "index.db") as copy:  # the backup is itself an index
        assert copy.check() == []
    restore(tmp_path / "b1", tmp_path / "restored.db")
    _equal(source, tmp_path / "restored.db")
    assert not list(tmp_path.glob(".*partial*"))


def test_backups_taken_during_writes_each_hold_one_committed_version(tmp_path: Path) -> None:
    path = tmp_path / "live.db"
    with Index(path, embedder=None) as index:
        index.add([Document(f"base{i}", f"granite harbour {i}") for i in range(50)])
        index.store.maintenance.flush_rows = 40
        stop = threading.Event()
        written: list[int] = []

        def writer() -> None:
            i = 0
            while not stop.is_set():
                index.add([Document(f"w{i:05d}", f"basalt cliff number {i} " * 5)])
                written.append(i)
                i += 1

        thread = threading.Thread(target=writer)
        thread.start()
        try:
            folders = []
            while len(folders) < 6:
                if len(written) > 20 * (len(folders) + 1):
                    folders.append(tmp_path / f"b{len(folders)}")
                    backup(path, folders[-1])  # another connection, as another process would
                else:
                    time.sleep(0.01)  # (a busy wait would hold the GIL from the writer)
        finally:
            stop.set()
            thread.join()
        final = contents(index)
    seen = []
    for n, folder in enumerate(folders):
        restore(folder, tmp_path / f"r{n}.db")
        copy = contents(tmp_path / f"r{n}.db")
        ids = sorted(doc for _, doc in copy if doc.startswith("w"))
        assert ids == [f"w{i:05d}" for i in range(len(ids))]  # a prefix of the writes
        assert all(copy[key] == final[key] for key in copy)  # each as it was committed
        with Index(tmp_path / f"r{n}.db") as restored:
            assert restored.check() == []
        seen.append(len(ids))
    assert seen == sorted(seen) and seen[-1] > seen[0]


def test_nothing_is_written_over(source: Path, tmp_path: Path) -> None:
    (tmp_path / "taken").mkdir()
    with pytest.raises(InputError, match="already exists"):
        backup(source, tmp_path / "taken")
    assert list((tmp_path / "taken").iterdir()) == []
    stale = tmp_path / ".b.partial-999999999-deadbeef"  # left by a process that died
    stale.mkdir()
    backup(source, tmp_path / "b")
    assert not stale.exists()
    (tmp_path / "there.db").write_bytes(b"mine")
    with pytest.raises(InputError, match="nothing is ever written over an index"):
        restore(tmp_path / "b", tmp_path / "there.db")
    assert (tmp_path / "there.db").read_bytes() == b"mine"
    (tmp_path / "out.jsonl").write_text("mine")
    with pytest.raises(InputError, match="already exists"):
        export_jsonl(source, tmp_path / "out.jsonl")
    assert (tmp_path / "out.jsonl").read_text() == "mine"


def test_a_damaged_backup_is_refused_before_anything_is_written(source, tmp_path) -> None:
    backup(source, tmp_path / "b")
    segment = next((tmp_path / "b" / "index.db-segments").glob("*.seg"))
    data = bytearray(segment.read_bytes())
    data[len(data) // 2] ^= 0xFF
    segment.write_bytes(bytes(data))
    with pytest.raises(InputError, match="damaged"):
        restore(tmp_path / "b", tmp_path / "r.db")
    assert not (tmp_path / "r.db").exists() and not (tmp_path / "r.db-segments").exists()


def test_postgres_backup_restores_into_another_schema(source, pg_url, tmp_path) -> None:
    first, second = pg_url(), pg_url()
    migrate(source, first)
    manifest = backup(first, tmp_path / "pg")
    assert manifest.store == "postgresql"
    assert sorted(p.name for p in (tmp_path / "pg" / "tables").iterdir())[0] == "chunks.copy"
    restore(tmp_path / "pg", second)
    _equal(first, second)
    with pytest.raises(InputError, match="not empty"):
        restore(tmp_path / "pg", second)
    with pytest.raises(InputError, match="restores into PostgreSQL only"):
        restore(tmp_path / "pg", tmp_path / "x.db")
    with Index(second) as index:  # the restored schema takes writes (sequences were set)
        index.add([Document("later", "a later note about the archive")], collection="notes")
        assert index.search("later archive", collection="notes")[0].document_id == "later"


def test_an_embedded_backup_restores_into_postgres(source, pg_url, tmp_path) -> None:
    backup(source, tmp_path / "b")
    url = pg_url()
    restore(tmp_path / "b", url)
    _equal(source, url, scores=False)


def test_export_and_import_move_an_index_between_stores(source, pg_url, tmp_path) -> None:
    url = pg_url()
    report = export_jsonl(source, tmp_path / "a.jsonl")
    assert report.vectors == report.chunks > 0
    assert import_jsonl(tmp_path / "a.jsonl", url).documents == report.documents
    _equal(source, url, scores=False)
    export_jsonl(url, tmp_path / "b.jsonl")
    import_jsonl(tmp_path / "b.jsonl", tmp_path / "back.db")
    _equal(source, tmp_path / "back.db")
    with pytest.raises(InputError, match="already holds documents"):
        import_jsonl(tmp_path / "b.jsonl", tmp_path / "back.db")


def test_a_cut_short_export_is_reported(source, tmp_path) -> None:
    export_jsonl(source, tmp_path / "a.jsonl", collections=["notes"])
    lines = (tmp_path / "a.jsonl").read_text().splitlines()
    assert json.loads(lines[-1])["end"] is True and json.loads(lines[-1])["documents"] == 9
    (tmp_path / "cut.jsonl").write_text("\n".join(lines[:-3]) + "\n")
    with pytest.raises(InputError, match="cut short"):
        import_jsonl(tmp_path / "cut.jsonl", tmp_path / "i.db")
    with pytest.raises(InputError, match="not a ragloom export"):
        import_jsonl(ROOT / "pyproject.toml", tmp_path / "j.db")
    assert not (tmp_path / "j.db").exists()  # refused before the target was created


def ragloom(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ragloom", *args],
        capture_output=True,
        text=True,
        input=stdin,
        timeout=300,
    )


def test_the_commands(source: Path, tmp_path: Path) -> None:
    dest = str(tmp_path / "b")
    made = ragloom("--index", str(source), "backup", dest)
    assert made.returncode == 0 and "backed up version" in made.stdout, made.stderr
    again = ragloom("--index", str(source), "backup", dest)
    assert again.returncode == 1 and "already exists" in again.stderr
    assert "Traceback" not in again.stderr
    target = str(tmp_path / "r.db")
    done = ragloom("restore", dest, target)
    assert done.returncode == 0 and f"as {target}" in done.stdout, done.stderr
    exported = ragloom("--index", target, "export", "-", "--collection", "notes")
    assert exported.returncode == 0 and exported.stdout.count("\n") == 9 + 3
    imported = ragloom("--index", str(tmp_path / "n.db"), "import", "-", stdin=exported.stdout)
    assert imported.returncode == 0 and "imported 9 documents" in imported.stdout
    assert contents(tmp_path / "n.db") == {
        k: v for k, v in contents(source).items() if k[0] == "notes"
    }
