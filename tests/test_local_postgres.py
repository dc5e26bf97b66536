"""`python -m ragloom.local_postgres`: starting twice reuses the running server (the same URL),
`stop` and `status` find it again, a stopped folder starts on its old port, and the launcher
works as root (the servers run as a system user) and as a normal user."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from ragloom.local_postgres import remove, scratch_folder

ROOT = Path(__file__).resolve().parents[1]


def launcher(*args: str, user: str | None = None, python: str = sys.executable, env=None):
    return subprocess.run(
        [python, "-m", "ragloom.local_postgres", *args],
        capture_output=True,
        text=True,
        timeout=120,
        user=user,
        env=env,
        cwd="/tmp",
    )


@pytest.fixture
def folder():
    path = scratch_folder() / "pg"
    yield path
    if (path / "ragloom-postgres.json").exists():
        launcher("stop", str(path))
    remove(path.parent)


def answers(url: str) -> bool:
    with psycopg.connect(url, connect_timeout=5) as conn:
        return conn.execute("SELECT 1").fetchone() == (1,)


def test_start_twice_reuses_the_server_then_stop_and_status(folder: Path) -> None:
    first = launcher(str(folder))
    assert first.returncode == 0, first.stderr
    url = first.stdout.strip()
    assert url.startswith("postgresql://postgres@127.0.0.1:") and answers(url)
    again = launcher("start", str(folder))
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == url  # the same server, no traceback
    status = launcher("status", str(folder), "--json")
    assert status.returncode == 0
    report = json.loads(status.stdout)
    assert report["running"] and report["url"] == url
    assert [s["name"] for s in report["servers"]] == ["primary"]

    stopped = launcher("stop", str(folder))
    assert stopped.returncode == 0 and "stopped primary" in stopped.stderr
    after = launcher("status", str(folder))
    assert after.returncode == 3 and "stopped" in after.stdout
    with pytest.raises(psycopg.OperationalError):
        answers(url)
    assert "was not running" in launcher("stop", str(folder)).stderr

    restarted = launcher(str(folder))
    assert restarted.returncode == 0, restarted.stderr
    assert restarted.stdout.strip() == url and answers(url)  # its old port, free again


def test_standbys_are_kept_across_restarts_and_fewer_are_refused(folder: Path) -> None:
    url = launcher(str(folder), "--standbys", "1").stdout.strip()
    hosts = url.split("@")[1].split("/")[0].split(",")
    assert len(hosts) == 2
    assert launcher(str(folder)).stdout.strip() == url  # no flag: what the folder holds
    fewer = launcher(str(folder), "--standbys", "0")
    assert fewer.returncode != 0 and "already holds a primary with 1 standby" in fewer.stderr
    assert "Traceback" not in fewer.stderr
    launcher("stop", str(folder))
    assert launcher(str(folder)).stdout.strip() == url
    standby = f"postgresql://postgres@{hosts[1]}/postgres"
    with psycopg.connect(standby) as conn:
        assert conn.execute("SELECT pg_is_in_recovery()").fetchone() == (True,)
        state = conn.execute("SELECT status FROM pg_stat_wal_receiver").fetchone()
    assert state == ("streaming",)


def test_shards_start_a_shard_set_that_restarts_on_its_ports(folder: Path) -> None:
    from ragloom import Document, Index

    url = launcher(str(folder), "--shards", "2", "--standbys", "1").stdout.strip()
    assert url.startswith("postgresql+shards://") and url.count(";") == 1
    assert url.count(",") == 2  # each shard: its primary and its standby
    with Index(url, embedder=None) as index:
        index.add([Document(f"d{i}", f"shard launcher words {i}") for i in range(20)])
        assert len(index.search("launcher", top_k=50)) == 20
        assert [s["reachable"] for s in index.stats()["shards"]] == [True, True]
    names = [
        s["name"] for s in json.loads(launcher("status", str(folder), "--json").stdout)["servers"]
    ]
    assert names == ["shard0/primary", "shard0/standby1", "shard1/primary", "shard1/standby1"]
    fewer = launcher(str(folder), "--shards", "1")
    assert fewer.returncode != 0 and "as shards" in fewer.stderr
    launcher("stop", str(folder))
    assert launcher(str(folder)).stdout.strip() == url
    with Index(url, embedder=None) as index:
        assert len(index.search("launcher", top_k=50)) == 20


def test_the_issues_module_name_starts_the_same_shard_set(folder: Path) -> None:
    """`python -m ragloom.store.postgres.local --shards N` (the command issue 26 names)
    is the launcher under another name: same set, same folder, stopped by either."""
    named = [sys.executable, "-m", "ragloom.store.postgres.local"]
    run = subprocess.run(
        [*named, str(folder), "--shards", "2"], capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    url = run.stdout.strip()
    assert url.startswith("postgresql+shards://") and url.count(";") == 1
    assert launcher("start", str(folder)).stdout.strip() == url  # the same set
    stopped = subprocess.run([*named, "stop", str(folder)], capture_output=True, text=True)
    assert stopped.returncode == 0, stopped.stderr
    assert not json.loads(launcher("status", str(folder), "--json").stdout)["running"]


def test_stop_and_status_of_a_folder_without_servers_say_so(tmp_path: Path) -> None:
    for command in ("stop", "status"):
        run = launcher(command, str(tmp_path / "nothing"))
        assert run.returncode == 1
        assert "no local PostgreSQL in" in run.stderr and "Traceback" not in run.stderr
    assert not (tmp_path / "nothing").exists()  # nothing was created


def test_ragloom_postgres_is_the_same_command(folder: Path) -> None:
    ragloom = [sys.executable, "-m", "ragloom.cli", "postgres"]
    started = subprocess.run([*ragloom, "start", str(folder)], capture_output=True, text=True)
    assert started.returncode == 0, started.stderr
    assert launcher(str(folder)).stdout == started.stdout
    status = subprocess.run([*ragloom, "status", str(folder)], capture_output=True, text=True)
    assert status.returncode == 0 and "running (pid" in status.stdout
    removed = subprocess.run(
        [*ragloom, "stop", str(folder), "--remove"], capture_output=True, text=True
    )
    assert removed.returncode == 0 and not folder.exists()


def _python_for(user: str) -> tuple[str, dict[str, str]] | None:
    """An interpreter `user` may run that imports ragloom from here (this one, or the system
    Python of the same version with this environment's packages on its path)."""
    path = os.pathsep.join(p for p in sys.path if p)
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": path, "HOME": "/tmp"}
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for python in (sys.executable, shutil.which(version, path="/usr/bin:/usr/local/bin")):
        if python is None:
            continue
        try:
            probe = subprocess.run(
                [python, "-c", "import ragloom.local_postgres"],
                capture_output=True,
                user=user,
                env=env,
                cwd="/tmp",
                check=False,
            )
        except PermissionError:  # the interpreter lives where `user` may not go
            continue
        if probe.returncode == 0:
            return python, env
    return None


@pytest.mark.skipif(os.geteuid() != 0, reason="the suite runs as a normal user already")
def test_works_as_a_normal_user_too() -> None:
    found = _python_for("nobody")
    if found is None:
        pytest.skip("no Python that the user nobody may run imports ragloom here")
    python, env = found
    folder = Path("/tmp") / f"ragloom-pg-nobody-{os.getpid()}"
    try:
        runs = [launcher(str(folder), user="nobody", python=python, env=env) for _ in range(2)]
        assert [r.returncode for r in runs] == [0, 0], runs[0].stderr + runs[1].stderr
        assert runs[0].stdout == runs[1].stdout and answers(runs[0].stdout.strip())
        assert (folder / "primary").stat().st_uid == pwd.getpwnam("nobody").pw_uid
        stop = launcher("stop", str(folder), "--remove", user="nobody", python=python, env=env)
        assert stop.returncode == 0, stop.stderr
        assert not folder.exists()
    finally:
        if folder.exists():
            launcher("stop", str(folder), user="nobody", python=python, env=env)
            shutil.rmtree(folder, ignore_errors=True)
