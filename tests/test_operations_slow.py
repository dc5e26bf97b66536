"""Slow checks on SciFact: backup, restore and export killed with SIGKILL midway leave the
source as it was and nothing under the destination name (and the next run cleans up and
succeeds); the salvage trials of bench/salvage.py; backups under a writer and searchers
(bench/backup_live.py, fewer rounds)."""

from __future__ import annotations

import hashlib
import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ragloom import Index
from ragloom.evaluation.beir import load_beir
from ragloom.operations import Manifest, backup
from ragloom.operations.salvage import check_index

from .conftest import shared_dataset

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]
KILLS = 8


@pytest.fixture(scope="module")
def scifact(tmp_path_factory) -> Path:
    """SciFact, lexical, flushed to segment files; and a backup of it."""
    path = tmp_path_factory.mktemp("scifact") / "scifact.db"
    with Index(path, embedder=None) as index:
        index.add(load_beir(shared_dataset("scifact")).iter_corpus())
        index.optimize()
    backup(path, path.parent / "backup")
    return path


def digests(*paths: Path) -> dict[str, str]:
    files = [f for p in paths for f in ([p] if p.is_file() else sorted(p.rglob("*")))]
    return {str(f): hashlib.sha256(f.read_bytes()).hexdigest() for f in files if f.is_file()}


def command(op: str, scifact: Path, dest: Path) -> list[str]:
    base = [sys.executable, "-m", "ragloom"]
    if op == "restore":
        return [*base, "restore", str(scifact.parent / "backup"), str(dest)]
    return [*base, "--index", str(scifact), op, str(dest)]


def leftovers(dest: Path) -> list[Path]:
    return sorted(dest.parent.glob(f".{dest.name}*")) + sorted(
        dest.parent.glob(f".{dest.name}-segments*")
    )


def kill_midway(args: list[str], dest: Path, rng: random.Random, wait_for_staging: bool):
    """Start the command; kill -9 it once its staging appears (plus a random moment), or at a
    random moment of its run. Returns (finished before the kill, staging seen at the kill)."""
    process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    if wait_for_staging:
        while not leftovers(dest) and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.001)
        time.sleep(rng.uniform(0, 0.02))  # the staging phase can be short: kill within it
    else:
        time.sleep(rng.uniform(0.2, 2.0))
    finished = process.poll() == 0
    seen = bool(leftovers(dest))
    process.send_signal(signal.SIGKILL)
    process.wait()
    return finished, seen and not finished


def complete(op: str, dest: Path) -> None:
    """A destination that exists is whole."""
    if op == "backup":
        Manifest.read(dest).verify(dest)
    elif op == "export":
        lines = dest.read_text().splitlines()
        assert json.loads(lines[-1])["end"] is True
    else:
        with Index(dest, embedder=None) as index:
            assert index.check() == []


@pytest.mark.parametrize("op", ["backup", "restore", "export"])
def test_kill_9_midway_leaves_the_source_and_no_partial_destination(scifact, tmp_path, op):
    source = [scifact, scifact.with_name("scifact.db-segments"), scifact.parent / "backup"]
    before = digests(*source)
    rng = random.Random(op)
    midway = 0
    suffix = {"backup": "", "restore": ".db", "export": ".jsonl"}[op]
    for trial in range(KILLS):
        dest = tmp_path / f"out{trial}{suffix}"
        finished, killed_midway = kill_midway(command(op, scifact, dest), dest, rng, trial % 2 == 0)
        midway += killed_midway
        if finished or dest.exists():  # done, or killed after its last rename: whole
            complete(op, dest)  # a destination that exists is never partial
            continue
        segments = dest.with_name(dest.name + "-segments")
        assert not segments.exists() or (segments / ".restoring").exists()
        again = subprocess.run(command(op, scifact, dest), capture_output=True, text=True)
        assert again.returncode == 0, again.stderr
        complete(op, dest)
        assert leftovers(dest) == []  # the dead run's staging was removed
    assert midway >= KILLS // 4, f"only {midway} kills landed while {op} was writing"
    assert digests(*source) == before
    assert check_index(scifact).ok
    print(f"{op}: {KILLS} kills, {midway} while its staging was being written")


def test_salvage_trials_on_scifact(tmp_path) -> None:
    data = shared_dataset("scifact").parent
    run = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "salvage.py"), "--data", str(data)]
        + ["--trials", "3", "--json", "--work", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    rows = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    assert len(rows) == 6, run.stderr
    for row in rows:
        assert row["recovered_equals_intact"] and row["original_untouched"], row
        assert row["repaired_check_ok"] and row["lost_ids_all_lost"], row
        assert row["queries_equal"] == row["queries"], row
        assert row["vanished"] >= 0 and row["lost_listed_by_id"] > 0, row
    assert run.returncode == 0


def test_backups_under_a_writer_and_searchers(tmp_path) -> None:
    data = shared_dataset("scifact").parent
    run = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "backup_live.py"), "--data", str(data)]
        + ["--backups", "5", "--base", "300", "--quiet", "5", "--work", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert run.returncode == 0, run.stdout + run.stderr  # every backup restored exactly
    assert "0 search errors" in run.stdout
