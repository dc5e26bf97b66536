"""Messages that say what is wrong: a SQLite file with no tables is not "an empty file", a
dropped table says the index is damaged and how to check it, creating an index in a folder
this user cannot write says read-only, and a body nested past the JSON parser's depth says
so instead of a generic parse error."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx
import pytest

import ragloom
from ragloom import StoreError
from tests.server_launch import ServerProcess

SRC = Path(ragloom.__file__).resolve().parents[1]


def test_a_sqlite_file_with_no_tables_is_not_called_empty(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA user_version = 7")
    assert path.stat().st_size > 0
    with pytest.raises(StoreError) as caught:
        ragloom.Index(path)
    assert "empty file" not in caught.value.message
    assert "SQLite" in caught.value.message and "no tables" in caught.value.message


def test_a_dropped_table_says_the_index_is_damaged(tmp_path: Path) -> None:
    path = tmp_path / "i.db"
    with ragloom.Index(path, embedder=None) as index:
        index.add([ragloom.Document("a", "the silver key")])
    with sqlite3.connect(path) as conn:
        conn.execute("DROP TABLE chunks")
    with pytest.raises(StoreError) as caught, ragloom.Index(path) as index:
        index.search("silver key")
    error = caught.value
    assert "damaged" in error.message and "chunks" in error.message, error.message
    assert "ragloom check" in (error.hint or ""), error.hint


@pytest.mark.skipif(os.geteuid() != 0, reason="switches to the user nobody to lack rights")
def test_creating_an_index_in_a_folder_this_user_cannot_write_says_read_only() -> None:
    folder = Path(tempfile.mkdtemp(prefix="ragloom-ro-"))
    try:
        folder.chmod(0o755)  # root's folder: nobody may read it, not write it
        (folder / "a.md").write_text("hello world\n")
        done = subprocess.run(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable]
            + ["-m", "ragloom.cli", "--index", str(folder / "new.db"), "index"]
            + [str(folder / "a.md")],
            capture_output=True,
            text=True,
            timeout=120,
            cwd="/tmp",
            env={**os.environ, "PYTHONPATH": str(SRC), "HOME": "/tmp"},
        )
        assert done.returncode == 1 and "read-only" in done.stderr, done.stderr
        assert str(folder) in done.stderr and "Traceback" not in done.stderr
    finally:
        for child in folder.iterdir():
            child.unlink()
        folder.rmdir()


def test_a_body_nested_too_deeply_says_so(tmp_path: Path) -> None:
    with ServerProcess(tmp_path / "i.db", env={"RAGLOOM_EMBEDDER": "none"}) as server:
        for depth in (1_000, 5_000):
            body = '{"query": "x", "filters": ' + '{"a": ' * depth + "1" + "}" * depth + "}"
            answer = httpx.post(
                f"{server.url}/query",
                content=body,
                headers={"Content-Type": "application/json"},
                timeout=30,
            )
            error = answer.json()
            assert answer.status_code == 400 and error["code"] == "bad_json", answer.text
            assert "nested" in error["error"] and error["hint"], error
