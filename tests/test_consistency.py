"""Issue 9's rules on real files: merges never change results, a failed write changes
nothing (file and memory), readers never take the write lock, creation races, schema errors."""

from __future__ import annotations

import os
import random
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import ragloom
from ragloom import Document, Index
from ragloom.errors import StorageFull, StoreError

WORDS = [
    "heron",
    "crane",
    "stork",
    "silver",
    "key",
    "lighthouse",
    "moor",
    "honey",
    "bees",
    "river",
    "stone",
    "mill",
    "bridge",
    "lantern",
    "forge",
    "smith",
    "tide",
    "harbor",
    "orchard",
    "raven",
    "ember",
    "frost",
    "willow",
    "cellar",
    "map",
    "compass",
]


def _doc(rng: random.Random, doc_id: str) -> Document:
    paragraphs = [
        " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 30))) + "."
        for _ in range(rng.randint(1, 4))
    ]
    meta = {"book": rng.randint(1, 3), "tags": rng.sample(["a", "b", "c"], rng.randint(0, 2))}
    return Document(doc_id, "\n\n".join(paragraphs), title=rng.choice(WORDS), metadata=meta)


def _scores(index: Index, query: str, **kw) -> dict[str, float]:
    hits = index.search(query, top_k=1000, mode="lexical", **kw)
    return {h.chunk_id: h.score for h in hits}


def _small_segments(index: Index, flush: int = 30, factor: int = 3) -> None:
    index.store.maintenance.flush_rows = flush
    index.store.maintenance.factor = factor


def test_flushes_and_merges_never_change_results(tmp_path: Path) -> None:
    """Adds, replaces and deletes across segment files and memory, merged at random points:
    every query's scores equal a fresh build of the surviving documents, exactly."""
    rng = random.Random(4)
    live: dict[str, Document] = {}
    with Index(tmp_path / "grown.db", embedder=None) as grown:
        _small_segments(grown)
        for step in range(40):
            batch = [_doc(rng, f"d{rng.randint(0, 120)}") for _ in range(rng.randint(1, 12))]
            grown.add(batch)
            live.update((d.id, d) for d in batch)
            if rng.random() < 0.4 and live:
                for doc_id in rng.sample(sorted(live), k=min(len(live), rng.randint(1, 4))):
                    grown.delete(doc_id)
                    del live[doc_id]
            if step % 7 == 3:
                grown.optimize()
        grown.optimize()
        counts = grown.stats()["collections"]["default"]
        assert counts["segments"]["files"] >= 1  # the test really crossed segment files
        with Index(tmp_path / "fresh.db", embedder=None) as fresh:
            fresh.add(sorted(live.values(), key=lambda d: d.id))
            for query in ["heron", "silver key", "moor honey bees", "forge smith tide", "frost"]:
                assert _scores(grown, query) == _scores(fresh, query), query
                spec = {"book": 2, "tags": {"$overlap": ["a"]}}
                assert _scores(grown, query, filters=spec) == _scores(fresh, query, filters=spec)
            assert grown.stats()["chunks"] == fresh.stats()["chunks"]
        assert grown.check() == []
    reopened = Index(tmp_path / "grown.db", embedder=None)  # as another process sees it
    with reopened, Index(tmp_path / "fresh.db", embedder=None) as fresh:
        for query in ["heron", "lantern raven"]:
            assert _scores(reopened, query) == _scores(fresh, query)


def test_a_failed_commit_changes_neither_file_nor_memory(tmp_path: Path, monkeypatch) -> None:
    """An injected SQLite failure at commit: the typed error, the old version everywhere,
    and later writes correct (compared with a fresh build)."""
    from ragloom.store.sqlite.write import SQLiteWrite

    path = tmp_path / "i.db"
    with Index(path, embedder=None) as index:
        index.add([Document("a", "alpha heron text"), Document("b", "beta crane words")])
        real_finish = SQLiteWrite.finish

        def full(self):
            real_finish(self)
            raise sqlite3.OperationalError("database or disk is full")

        monkeypatch.setattr(SQLiteWrite, "finish", full)
        with pytest.raises(StorageFull, match="full"):
            index.add([Document("a", "zeta quokka newword"), Document("c", "gamma stork")])
        monkeypatch.undo()
        assert _scores(index, "quokka newword stork") == {}  # nothing of the failed write
        assert set(_scores(index, "heron crane")) == {"a-0", "b-0"}
        index.add([Document("c", "gamma stork quokka"), Document("d", "delta newword")])
        with Index(tmp_path / "fresh.db", embedder=None) as fresh:
            fresh.add([Document("a", "alpha heron text"), Document("b", "beta crane words")])
            fresh.add([Document("c", "gamma stork quokka"), Document("d", "delta newword")])
            for query in ["quokka", "newword", "heron stork", "gamma delta"]:
                assert _scores(index, query) == _scores(fresh, query)
        assert index.check() == []


def test_term_ids_stay_right_when_two_writers_add_vocabulary_in_turn(tmp_path: Path) -> None:
    """Each index object caches the vocabulary it has written and skips looking up terms
    it lacks while it knows it holds them all; once another writer (here a second index on
    the same file, as another process) adds terms, lookups resume and no term is doubled."""
    path = tmp_path / "i.db"
    with Index(path, embedder=None) as first, Index(path, embedder=None) as second:
        first.add([Document("a", "apple orchard")])
        second.add([Document("b", "banana cherry orchard")])
        first.add([Document("c", "cherry damson apple")])  # cherry exists: found, not added
        second.add([Document("d", "damson elder")])
        first.add([Document("e", "elder fig banana")])
        with Index(tmp_path / "fresh.db", embedder=None) as fresh:
            fresh.add(
                [
                    Document(i, t)
                    for i, t in [
                        ("a", "apple orchard"),
                        ("b", "banana cherry orchard"),
                        ("c", "cherry damson apple"),
                        ("d", "damson elder"),
                        ("e", "elder fig banana"),
                    ]
                ]
            )
            for query in ["cherry", "damson", "elder", "banana apple", "orchard fig"]:
                assert _scores(first, query) == _scores(fresh, query), query
                assert _scores(second, query) == _scores(fresh, query), query
        assert first.check() == []
    with sqlite3.connect(path) as conn:
        terms = [t for (t,) in conn.execute("SELECT term FROM terms")]
    assert len(terms) == len(set(terms)) == 7


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")
def test_a_full_disk_is_storage_full_and_nothing_is_lost(tmp_path: Path) -> None:
    mount = tmp_path / "small"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], check=True)
    try:
        rng = random.Random(1)
        committed: list[Document] = []
        with Index(mount / "i.db", embedder=None) as index:
            error = None
            for i in range(400):
                batch = [_doc(rng, f"n{i}-{j}") for j in range(20)]
                try:
                    index.add(batch)
                except StorageFull as exc:
                    error = exc
                    break
                committed.extend(batch)
            assert error is not None and error.code == "storage_full"
            assert "rollback" not in str(error).lower()
            (mount / "ballast").write_bytes(b"")  # index still answers while the disk is full
            assert index.stats()["documents"] == len(committed)
            for entry in mount.iterdir():  # free space: drop the WAL's growth by checkpoint
                if entry.name.endswith("-segments"):
                    continue
            subprocess.run(["mount", "-o", "remount,size=8m", str(mount)], check=True)
            more = [_doc(rng, f"after-{j}") for j in range(10)]
            index.add(more)
            committed.extend(more)
            assert index.check() == []
            with Index(tmp_path / "fresh.db", embedder=None) as fresh:
                fresh.add(committed)
                for query in ["heron", "silver key", "raven ember"]:
                    assert _scores(index, query) == _scores(fresh, query)
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_readers_never_take_the_write_lock_at_open(tmp_path: Path) -> None:
    """A search in another process while a write transaction holds the lock for 3 s."""
    path = tmp_path / "i.db"
    with Index(path, embedder=None) as index:
        index.add([Document("a", "alpha heron text")])
        with index.store.write():
            started = subprocess.run(
                [sys.executable, "-m", "ragloom", "--index", str(path), "search", "heron"],
                capture_output=True,
                text=True,
                timeout=20,
                env={**os.environ, "RAGLOOM_EMBEDDER": "none"},
            )
        assert started.returncode == 0, started.stderr
        assert "a-0" in started.stdout


def _run_as_nobody(args: list[str]) -> subprocess.CompletedProcess:
    prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    command = [*prefix, sys.executable, "-m", "ragloom", *args]
    env = {**os.environ, "RAGLOOM_EMBEDDER": "none", "HOME": "/tmp"}
    # Generous: as another user the compiled kernels' cache is not this user's, so the first
    # run may compile them, which a busy machine can stretch past a minute.
    return subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)


@pytest.mark.skipif(os.geteuid() != 0, reason="runs the CLI as another user (needs root)")
def test_a_read_only_file_and_folder_are_searched_from_the_cli() -> None:
    import shutil
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="ragloom-ro-", dir="/tmp"))  # traversable by others
    base.chmod(0o755)
    folder = base / "ro"
    folder.mkdir()
    path = folder / "i.db"
    with Index(path, embedder=None) as index:
        index.add([Document("a", "alpha heron text"), Document("b", "beta crane")])
    folder.chmod(0o555)
    path.chmod(0o444)
    try:
        found = _run_as_nobody(["--index", str(path), "search", "heron"])
        assert found.returncode == 0, found.stderr
        assert "a-0" in found.stdout
        stats = _run_as_nobody(["--index", str(path), "stats", "--json"])
        assert stats.returncode == 0 and '"read_only": true' in stats.stdout
        refused = _run_as_nobody(["--index", str(path), "delete", "a"])
        assert refused.returncode == 1
        assert "read-only" in refused.stderr and "Traceback" not in refused.stderr
        assert "remove" not in refused.stderr.lower()  # never advises deleting a good index
    finally:
        folder.chmod(0o755)
        shutil.rmtree(base)


@pytest.mark.skipif(os.geteuid() != 0, reason="a read-only mount needs root")
def test_a_read_only_file_system_opens_for_search(tmp_path: Path) -> None:
    mount = tmp_path / "mnt"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mount)], check=True)
    try:
        with Index(mount / "i.db", embedder=None) as index:
            index.add([Document("a", "alpha heron text")])
        subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)
        with Index(mount / "i.db", embedder=None) as index:
            assert index.read_only
            assert index.search("heron")[0].chunk_id == "a-0"
            with pytest.raises(StoreError, match="read-only"):
                index.add([Document("b", "beta")])
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


CREATE = """
import sys, ragloom
with ragloom.Index(sys.argv[1], embedder=None) as index:
    index.add([ragloom.Document(sys.argv[2], "text from " + sys.argv[2])])
"""


def test_two_processes_creating_one_index_both_succeed(tmp_path: Path) -> None:
    failures = []
    for pair in range(20):
        path = tmp_path / f"new{pair}.db"
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", CREATE, str(path), f"p{i}"],
                stderr=subprocess.PIPE,
                text=True,
            )
            for i in range(2)
        ]
        for proc in procs:
            _, err = proc.communicate(timeout=60)
            if proc.returncode:
                failures.append(err)
        with Index(path, embedder=None) as index:
            assert index.stats()["documents"] == 2
    assert failures == []


def _schema(path: Path, value: str) -> None:
    conn = sqlite3.connect(path)
    conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (value,))
    conn.commit()
    conn.close()


def test_a_newer_schema_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    path = tmp_path / "i.db"
    with Index(path, embedder=None) as index:
        index.add([Document("a", "alpha")])
    _schema(path, "99")
    before = path.read_bytes()
    with pytest.raises(StoreError, match="newer ragloom"):
        Index(path)
    assert path.read_bytes() == before


@pytest.mark.parametrize("damage", ["version text", "no version", "truncated", "corrupt page"])
def test_damaged_files_give_a_typed_error(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "i.db"
    with Index(path, embedder=None) as index:
        index.add([Document(f"d{i}", f"text number {i} " * 50) for i in range(200)])
    if damage == "version text":
        _schema(path, "two")
    elif damage == "no version":
        conn = sqlite3.connect(path)
        conn.execute("DELETE FROM meta WHERE key = 'schema_version'")
        conn.commit()
        conn.close()
    elif damage == "truncated":
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 3])
    else:
        data = bytearray(path.read_bytes())
        page = 4096 * 3
        data[page : page + 4096] = b"\xff" * 4096
        path.write_bytes(bytes(data))
    result = subprocess.run(
        [sys.executable, "-m", "ragloom", "--index", str(path), "search", "text"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "Traceback" not in result.stderr
    if result.returncode == 0:  # a corrupt page the search does not touch: check finds it
        check = subprocess.run(
            [sys.executable, "-m", "ragloom", "--index", str(path), "check"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert check.returncode != 0 and "Traceback" not in check.stderr
    else:
        assert "error:" in result.stderr
        assert "remove the file" not in result.stderr


def test_check_finds_disagreement(tmp_path: Path) -> None:
    """Segment files built from the rows, then the rows changed behind ragloom's back."""
    path = tmp_path / "i.db"
    with Index(path, embedder=None) as index:
        _small_segments(index, flush=2)
        index.add([Document("a", "alpha heron"), Document("b", "beta crane")])
        index.optimize()
        assert index.stats()["collections"]["default"]["segments"]["files"] == 1
        assert index.check() == []
    conn = sqlite3.connect(path)
    conn.execute("UPDATE chunks SET terms = (SELECT terms FROM chunks WHERE id = 2) WHERE id = 1")
    conn.commit()
    conn.close()
    with Index(path, embedder=None) as index:
        problems = index.check()
    assert any("postings differ" in p for p in problems), problems
    result = subprocess.run(
        [sys.executable, "-m", "ragloom", "--index", str(path), "check"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "RAGLOOM_EMBEDDER": "none"},
    )
    assert result.returncode == 1 and "postings differ" in result.stdout + result.stderr


def test_old_schema_one_files_are_upgraded(tmp_path: Path) -> None:
    """A schema-1 index (documents with text, postings as u4+f4, vectors and cache tables)."""
    from ragloom.segments.postings import Postings

    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.executescript(OLD_SCHEMA)
    terms = {"heron": 1, "alpha": 2, "crane": 3}
    conn.executemany("INSERT INTO terms VALUES (?, ?)", [(i, t) for t, i in terms.items()])
    conn.execute("INSERT INTO collections VALUES (1, 'default', '{}')")
    text = "alpha heron\n\nheron crane"
    conn.execute("INSERT INTO documents VALUES (1, 1, 'a', NULL, NULL, '{}', 'h', ?, 0)", (text,))
    import numpy as np

    def old(pairs):
        ids = np.array(sorted(pairs), "<u4")
        return ids.tobytes() + np.array([pairs[i] for i in sorted(pairs)], "<f4").tobytes()

    conn.execute(
        "INSERT INTO chunks VALUES (1, 1, 0, 'alpha heron', 0, 11, '{}', ?)", (old({2: 1, 1: 1}),)
    )
    conn.execute(
        "INSERT INTO chunks VALUES (2, 1, 1, 'heron crane', 13, 24, '{}', ?)", (old({1: 1, 3: 1}),)
    )
    conn.execute("PRAGMA application_id=1380404301")
    conn.commit()
    conn.close()
    with Index(path, embedder=None) as index:
        assert [h.chunk_id for h in index.search("crane")] == ["a-1"]
        assert index.document_text("a") == text
        assert index.check() == []
    assert Postings  # the new encoding is what the upgraded rows hold


OLD_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO meta VALUES ('schema_version', '1');
CREATE TABLE collections (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, config TEXT NOT NULL);
CREATE TABLE documents (id INTEGER PRIMARY KEY, collection_id INTEGER NOT NULL,
    doc_id TEXT NOT NULL, source TEXT, title TEXT, metadata TEXT NOT NULL,
    content_hash TEXT NOT NULL, text TEXT NOT NULL, indexed_at REAL NOT NULL,
    UNIQUE (collection_id, doc_id));
CREATE TABLE chunks (id INTEGER PRIMARY KEY AUTOINCREMENT, document_id INTEGER NOT NULL,
    n INTEGER NOT NULL, text TEXT NOT NULL, start INTEGER NOT NULL, "end" INTEGER NOT NULL,
    metadata TEXT NOT NULL, postings BLOB NOT NULL);
CREATE INDEX chunks_by_document ON chunks(document_id);
CREATE TABLE terms (id INTEGER PRIMARY KEY, term TEXT NOT NULL UNIQUE);
CREATE TABLE vectors (chunk_id INTEGER PRIMARY KEY, vector BLOB NOT NULL);
CREATE TABLE embedding_cache (model TEXT NOT NULL, text_hash BLOB NOT NULL, vector BLOB NOT NULL,
    PRIMARY KEY (model, text_hash)) WITHOUT ROWID;
"""


def test_ragloom_module_exports_the_check_command() -> None:
    assert callable(ragloom.Index.check)


def test_merging_segments_whose_chunks_were_all_deleted(tmp_path: Path) -> None:
    """A merge whose inputs hold only deleted chunks writes nothing and retires them (it
    used to fail on every attempt, so such segments were never merged away)."""
    with Index(tmp_path / "i.db", embedder=None) as index:
        _small_segments(index, flush=20, factor=2)
        for batch in range(4):
            index.add(
                [Document(f"b{batch}-{i}", f"heron silver key {batch} {i}") for i in range(25)]
            )
            index.optimize()
        for batch in range(4):
            for i in range(25):
                index.delete(f"b{batch}-{i}")
        index.add([Document("kept", "lantern raven moor")])
        index.optimize()
        assert not index.store.maintenance.deferred
        counts = index.stats()["collections"]["default"]
        assert counts["chunks"] == 1
        assert counts["segments"]["files"] <= 1
        assert [h.document_id for h in index.search("lantern")] == ["kept"]
        assert index.search("heron") == []
        assert index.check() == []
