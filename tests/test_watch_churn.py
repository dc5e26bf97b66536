"""The watcher's targets as tests (issue 46): a churning folder of 50 notes ends equal to the
index; `ragloom index --watch` killed with -9, 40 changes made while it is down, restarted:
equal again; SIGTERM writes what is queued and exits 0. Both stores. Timings are the
benchmark's (bench/watch.py): these wait on conditions with generous timeouts."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ragloom import Index
from ragloom.watch import Watcher

from .folder_churn import FolderChurn
from .test_watch import eventually

ENV = {"RAGLOOM_EMBEDDER": "none"}


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The watcher keeps its marks in the user's cache folder: this test's own."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def churn_until_equal(folder: Path, location, operations: int, pause: float) -> None:
    churn = FolderChurn(folder, notes=50, seed=operations)
    churn.setup()
    with Index(location) as index, Watcher(index, [folder]):
        for _ in range(operations):
            churn.step()
            time.sleep(pause)
        eventually(lambda: not churn.differences(index), timeout=120)
        assert churn.differences(index) == []


def test_a_short_churn_ends_equal(tmp_path: Path, locate) -> None:
    churn_until_equal(tmp_path / "notes", locate(), operations=60, pause=0.01)


@pytest.mark.slow
def test_three_hundred_operations_in_a_minute_end_equal(tmp_path: Path, locate) -> None:
    churn_until_equal(tmp_path / "notes", locate(), operations=300, pause=0.2)


def start_watching(location: str, folder: Path) -> subprocess.Popen:
    """`ragloom index FOLDER --watch` as a child; returns once its first sweep is done."""
    command = [sys.executable, "-m", "ragloom.cli", "--index", location]
    proc = subprocess.Popen(
        [*command, "index", str(folder), "--watch"],
        stderr=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, **ENV},
    )
    assert proc.stderr is not None
    for line in proc.stderr:
        if line.startswith("watching "):
            return proc
    raise AssertionError(f"the watcher ended early: {proc.wait()}")


def test_kill_9_then_forty_changes_then_a_restart_catches_up(tmp_path: Path, locate) -> None:
    location, folder = str(locate()), tmp_path / "notes"
    churn = FolderChurn(folder, notes=50, seed=40)
    churn.setup()
    watcher = start_watching(location, folder)
    try:
        with Index(location) as index:
            eventually(lambda: not churn.differences(index))
        watcher.send_signal(signal.SIGKILL)
        watcher.wait()
        for _ in range(40):
            churn.step()
        watcher = start_watching(location, folder)  # the lease died with the killed one
        with Index(location) as index:
            eventually(lambda: not churn.differences(index))
    finally:
        watcher.kill()
        watcher.wait()


def test_sigterm_writes_what_is_queued_and_exits_0(tmp_path: Path) -> None:
    location, folder = str(tmp_path / "i.db"), tmp_path / "notes"
    churn = FolderChurn(folder, notes=5, seed=1)
    churn.setup()
    watcher = start_watching(location, folder)
    for _ in range(30):
        churn.step()
    watcher.send_signal(signal.SIGTERM)
    assert watcher.wait(timeout=120) == 0
    with Index(location) as index:
        assert churn.differences(index) == []


def test_a_second_watching_command_is_refused(tmp_path: Path) -> None:
    location, folder = str(tmp_path / "i.db"), tmp_path / "notes"
    FolderChurn(folder, notes=3).setup()
    first = start_watching(location, folder)
    try:
        command = [sys.executable, "-m", "ragloom.cli", "--index", location, "index"]
        second = subprocess.run(
            [*command, str(folder), "--watch"],
            capture_output=True,
            text=True,
            env={**os.environ, **ENV},
        )
        assert second.returncode == 1
        assert f"process {first.pid}" in second.stderr and "one writer" in second.stderr
        once = subprocess.run(
            [*command, str(folder)],
            capture_output=True,
            text=True,
            env={**os.environ, **ENV, "RAGLOOM_WRITER_WAIT": "0.5"},
        )
        assert once.returncode == 1 and "watching" in once.stderr
    finally:
        first.send_signal(signal.SIGTERM)
        assert first.wait(timeout=120) == 0


def test_the_sidecar_watches_and_its_health_says_so(tmp_path: Path) -> None:
    import httpx

    from tests.server_launch import ServerProcess

    folder = tmp_path / "notes"
    churn = FolderChurn(folder, notes=5, seed=2)
    churn.setup()
    args = ["--watch", str(folder)]
    with ServerProcess(tmp_path / "s.db", extra_args=args, env={"RAGLOOM_EMBEDDER": "none"}) as srv:
        health = lambda: httpx.get(f"{srv.url}/health", timeout=30).json()  # noqa: E731
        eventually(lambda: health()["watch"]["batches"] >= 1)
        change = churn.step()
        while change.mark is None:
            change = churn.step()

        def searchable() -> bool:
            body = {"query": change.mark, "mode": "lexical"}
            hits = httpx.post(f"{srv.url}/query", json=body, timeout=30).json()["results"]
            return [h["document_id"] for h in hits][:1] == [change.path]

        eventually(searchable)
        state = health()["watch"]
        assert state["folders"] == ["notes"] and state["mode"] == "native"
        assert state["last_change"] and state["pending"] == {"paths": 0, "vectors": 0}
        assert str(tmp_path) not in str(state)


def test_the_sidecar_does_not_start_watching_an_index_another_process_watches(
    tmp_path: Path,
) -> None:
    from ragloom.errors import RagloomError
    from tests.server_launch import ServerProcess

    location, folder = str(tmp_path / "i.db"), tmp_path / "notes"
    FolderChurn(folder, notes=3).setup()
    first = start_watching(location, folder)
    try:
        with pytest.raises(RagloomError) as refused:
            ServerProcess(location, extra_args=["--watch", str(folder)], env=ENV)
        assert "one writer" in str(refused.value) and f"process {first.pid}" in str(refused.value)
    finally:
        first.send_signal(signal.SIGTERM)
        first.wait(timeout=120)
