"""A fresh clone has no ../shared/data: tests needing it skip, unless CI requires them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NEEDS_DATA = "tests/test_beir_loader.py::test_shared_collection_counts"
# Plugins this check does not need (they take most of a pytest start-up), and no workers.
PLUGINS_OFF = ["-p", "no:cacheprovider", "-p", "no:schemathesis", "-p", "no:hypothesispytest"]
IN_PROCESS = ["-n", "0"]


def _pytest(env: dict[str, str]) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("RAGLOOM_")}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", *PLUGINS_OFF, *IN_PROCESS, NEEDS_DATA],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_missing_shared_collections_skip_with_the_reason(tmp_path: Path) -> None:
    run = _pytest({"RAGLOOM_DATA": str(tmp_path)})
    assert run.returncode == 0, run.stdout + run.stderr
    assert "2 skipped" in run.stdout
    assert "shared collection 'scifact' not found" in run.stdout
    assert "set RAGLOOM_DATA" in run.stdout


def test_ci_requires_them(tmp_path: Path) -> None:
    run = _pytest({"RAGLOOM_DATA": str(tmp_path), "RAGLOOM_REQUIRE_DATA": "1"})
    assert run.returncode == 1, run.stdout + run.stderr
    assert "2 failed" in run.stdout and "RAGLOOM_REQUIRE_DATA=1" in run.stdout


def test_ci_script_requires_the_shared_collections() -> None:
    script = (ROOT / ".ci" / "run").read_text()
    assert "export RAGLOOM_REQUIRE_DATA=1" in script
    assert script.index("RAGLOOM_REQUIRE_DATA=1") < script.index(".venv/bin/pytest -q\n")
