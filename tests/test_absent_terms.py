"""Query words the vocabulary lacks are looked up once per committed version: a search
repeating them reads no terms table, and a write that brings them (from this process or
another) makes them found at once."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from ragloom import Document, Index


def _term_queries(index: Index) -> list[str]:
    """Start recording the terms-table reads of the index's reader connections."""
    seen: list[str] = []
    store = index._searcher.store
    with store.snapshot():
        pass  # this thread's reader connection exists from here on
    for conn in store._readers:
        conn.set_trace_callback(lambda sql: seen.append(sql) if "FROM terms" in sql else None)
    return seen


@pytest.fixture()
def path(tmp_path: Path) -> Path:
    db = tmp_path / "absent.db"
    with Index(db) as index:
        index.add([Document("a", "the quick brown fox"), Document("b", "lazy dogs")])
    return db


def test_an_absent_word_is_looked_up_once_per_version(path: Path) -> None:
    with Index(path) as index:
        seen = _term_queries(index)
        assert index.search("zebra fox", mode="lexical")[0].document_id == "a"
        first = len(seen)
        assert first >= 1  # 'zebra' (and 'fox', not cached yet) read from the table
        for _ in range(3):
            assert [h.document_id for h in index.search("zebra fox", mode="lexical")] == ["a"]
        assert len(seen) == first  # neither word read again: one known, one known absent


def test_a_write_here_makes_the_absent_word_found(path: Path) -> None:
    with Index(path) as index:
        assert index.search("zebra", mode="lexical") == []
        index.add([Document("z", "a zebra crossing")])
        assert [h.document_id for h in index.search("zebra", mode="lexical")] == ["z"]


def test_a_write_by_another_process_makes_the_absent_word_found(path: Path) -> None:
    with Index(path, read_only=True) as reader:
        assert reader.search("zebra", mode="lexical") == []
        with Index(path) as writer:  # its own store and caches, as another process's
            writer.add([Document("z", "a zebra crossing")])
        assert [h.document_id for h in reader.search("zebra", mode="lexical")] == ["z"]


def test_an_older_snapshot_never_learns_a_newer_absence(path: Path) -> None:
    """A term absent at an older version may exist at a newer one: an older snapshot's
    misses must not mark it absent for the newer version."""
    with Index(path) as index:
        store = index._searcher.store
        cache = store.terms
        conn = sqlite3.connect(path)
        try:
            conn.execute("INSERT INTO terms (term) VALUES ('walrus')")  # committed, gen 'later'
            conn.commit()
            with store.snapshot() as snap:
                generation = snap.generation
                assert cache.lookup_at(snap.conn, {"walrus"}, generation + 1).keys() == {"walrus"}
                cache.lookup_at(snap.conn, {"narwhal"}, generation)  # an older reader's miss
                conn.execute("INSERT INTO terms (term) VALUES ('narwhal')")
                conn.commit()
            with store.snapshot() as snap:  # a new read transaction sees narwhal
                assert "narwhal" in cache.lookup_at(snap.conn, {"narwhal"}, generation + 1)
        finally:
            conn.close()
