"""A reader connection reuses the collections it read at its last snapshot while nothing was
committed since (SQLite's data_version), and reads them again after any commit: by this
store's writer, its background maintenance or another process's store on the same file."""

from __future__ import annotations

from pathlib import Path

from ragloom import Document, Index
from ragloom.store.sqlite.store import SQLiteStore


def _rows(store: SQLiteStore):
    with store.snapshot() as snap:
        return snap.rows, snap.generation


def test_snapshots_without_a_commit_between_share_the_collections(tmp_path: Path) -> None:
    index = Index(tmp_path / "a.db")
    index.add([Document("d1", "bees make honey")])
    first, generation = _rows(index.store)
    second, again = _rows(index.store)
    assert second is first and again == generation
    index.close()


def test_a_commit_by_the_writer_is_seen_by_the_next_snapshot(tmp_path: Path) -> None:
    index = Index(tmp_path / "a.db")
    index.add([Document("d1", "bees make honey")])
    before, generation = _rows(index.store)
    index.add([Document("n1", "notes on wax")], collection="notes")
    after, later = _rows(index.store)
    assert set(after) == {"default", "notes"} and "notes" not in before and later > generation
    index.configure(search={"fusion": "rrf", "rrf_k": 30})
    configured, _ = _rows(index.store)
    assert configured["default"].config["search"] == {"fusion": "rrf", "rrf_k": 30}
    assert [h.chunk_id for h in index.search("wax", collection="notes")] == ["n1-0"]
    index.close()


def test_a_commit_by_another_store_on_the_file_is_seen(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    reader = Index(path)
    reader.add([Document("d1", "bees make honey")])
    before, _ = _rows(reader.store)
    writer = Index(path)  # another process's store: its own connections
    writer.add([Document("n1", "notes on wax")], collection="notes")
    writer.close()
    after, _ = _rows(reader.store)
    assert "notes" not in before and "notes" in after
    assert [h.chunk_id for h in reader.search("wax", collection="notes")] == ["n1-0"]
    reader.close()


def test_a_maintenance_commit_that_keeps_the_generation_is_seen(tmp_path: Path) -> None:
    index = Index(tmp_path / "a.db")
    index.add([Document(f"d{i}", f"bees make honey number {i}") for i in range(50)])
    before, generation = _rows(index.store)
    conn = index.store.writer()  # a flush moves `flushed_upto` without a new generation
    with conn:
        conn.execute("UPDATE collections SET flushed_upto = flushed_upto + 1")
    after, again = _rows(index.store)
    assert again == generation and after is not before
    assert after["default"].flushed_upto == before["default"].flushed_upto + 1
    index.close()
