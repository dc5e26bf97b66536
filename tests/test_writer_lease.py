"""One writer of folders per index (issue 46, item 5): a second `ragloom index` (or watcher)
waits, then is refused with a message naming the holder, and writes nothing; the lease dies
with its process (kill -9 included); within one process it is shared. Both stores."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ragloom import Index
from ragloom.engine import writes
from ragloom.errors import WriterBusy

HOLD = """
import sys, time
from ragloom import Index
with Index(sys.argv[1], embedder=None) as index, index.store.writer_lease("the holder script"):
    print("held", flush=True)
    time.sleep(600)
"""


def _holder(location: str) -> subprocess.Popen:
    env = {**os.environ, "RAGLOOM_EMBEDDER": "none"}
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, location], stdout=subprocess.PIPE, text=True, env=env
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.md").write_text("The wyrmqueen sleeps under the glacier.")
    return tmp_path / "notes"


def test_a_second_writer_is_refused_naming_the_holder_until_it_dies(
    folder: Path, locate, monkeypatch: pytest.MonkeyPatch
) -> None:
    location = str(locate())
    Index(location).close()  # the index exists before the holder opens it
    holder = _holder(location)
    monkeypatch.setattr(writes, "LEASE_WAIT", 0.3)
    try:
        with Index(location) as index:
            started = time.monotonic()
            with pytest.raises(WriterBusy) as refused:
                index.index_path(folder)
            assert time.monotonic() - started >= 0.3  # it waited first
            assert f"process {holder.pid}" in refused.value.message
            assert "the holder" in refused.value.message
            assert refused.value.code == "writer_busy" and refused.value.hint
            assert index.stats()["documents"] == 0  # nothing written
            holder.send_signal(signal.SIGKILL)
            holder.wait()
            monkeypatch.setattr(writes, "LEASE_WAIT", 30.0)  # the server may take a moment
            assert index.index_path(folder).documents == 1
    finally:
        holder.kill()
        holder.wait()


def test_a_waiting_writer_goes_on_when_the_lease_is_released(folder: Path, locate) -> None:
    location = str(locate())
    Index(location).close()
    holder = _holder(location)
    try:
        with Index(location) as index:
            holder.terminate()  # let go while the run below waits for it
            assert index.index_path(folder).documents == 1
    finally:
        holder.kill()
        holder.wait()


def test_the_lease_is_shared_within_a_process(folder: Path, locate) -> None:
    location = locate()
    with Index(location) as index, index.store.writer_lease("this process"):
        assert index.index_path(folder).documents == 1
        with Index(location) as other:  # another Index of the same process
            assert other.index_path(folder).unchanged == 1


def test_the_command_is_refused_with_exit_status_1(tmp_path: Path, folder: Path) -> None:
    db = str(tmp_path / "cli.db")
    Index(db).close()
    holder = _holder(db)
    env = {**os.environ, "RAGLOOM_EMBEDDER": "none", "RAGLOOM_WRITER_WAIT": "0"}
    try:
        command = [sys.executable, "-m", "ragloom.cli", "--index", db, "index", str(folder)]
        result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
        assert result.returncode == 1
        assert f"process {holder.pid}" in result.stderr and "one writer" in result.stderr
        assert result.stderr.startswith("error: ") and "hint: " in result.stderr
    finally:
        holder.kill()
        holder.wait()


def test_the_holder_shown_to_others_holds_no_secret() -> None:
    from ragloom.store.lease import command_line

    shown = command_line(
        [
            "/usr/bin/ragloom",
            "--index",
            "postgresql://app:s3cret@db.local:5432/notes?schema=x",
            "serve",
            "--token",
            "tok-123",
            "--api-key=k-456",
            "--watch",
            "notes",
        ]
    )
    assert "s3cret" not in shown and "tok-123" not in shown and "k-456" not in shown
    assert shown.startswith("ragloom --index postgresql://app@db.local:5432/notes")
    assert shown.endswith("--watch notes")


def test_post_index_of_a_folder_is_refused_with_409(tmp_path: Path, folder: Path) -> None:
    import httpx

    from tests.server_launch import ServerProcess

    db = str(tmp_path / "s.db")
    Index(db).close()
    holder = _holder(db)
    env = {"RAGLOOM_EMBEDDER": "none", "RAGLOOM_WRITER_WAIT": "0.2"}
    try:
        with ServerProcess(db, roots=[folder], env=env) as server:
            answer = httpx.post(f"{server.url}/index", json={"path": str(folder)}, timeout=60)
            assert answer.status_code == 409, answer.text
            body = answer.json()
            assert body["code"] == "writer_busy" and f"process {holder.pid}" in body["error"]
            inline = {"documents": [{"id": "n1", "text": "records need no lease"}]}
            assert httpx.post(f"{server.url}/index", json=inline, timeout=60).json()["ok"]
    finally:
        holder.kill()
        holder.wait()
