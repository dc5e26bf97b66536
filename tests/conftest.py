"""Shared fixtures: real index files in a temp folder, the shared evaluation data."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import ragloom

# Tests are lexical unless they ask for a model (embedder="local" or an HTTP embedder): the
# local model is installed in CI, and "auto" would otherwise embed every test corpus.
os.environ["RAGLOOM_EMBEDDER"] = "none"

DATA = Path(os.environ.get("RAGLOOM_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))


@pytest.fixture
def index_path(tmp_path: Path) -> Path:
    return tmp_path / "index.db"


@pytest.fixture
def index(index_path: Path):
    idx = ragloom.Index(index_path)
    yield idx
    idx.close()


def shared_dataset(name: str) -> Path:
    """Path of a shared BEIR collection. When it is missing the test is skipped with the
    reason (a fresh clone has no ../shared), or fails when RAGLOOM_REQUIRE_DATA=1 (CI)."""
    path = DATA / name
    if not (path / "corpus.jsonl").exists():
        where = f"shared collection {name!r} not found at {path}"
        if os.environ.get("RAGLOOM_REQUIRE_DATA") == "1":
            pytest.fail(f"{where} and RAGLOOM_REQUIRE_DATA=1 (set RAGLOOM_DATA to its folder)")
        pytest.skip(f"{where}: set RAGLOOM_DATA to the folder holding it to run this test")
    return path
