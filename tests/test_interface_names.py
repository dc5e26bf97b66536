"""The names a user reads in the README work everywhere: `tokens` on a search (as over HTTP
and on the command line), `text` for a hit's passage (library, `--json`, HTTP), and an
unknown search option names itself and the known ones, never an internal class."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import ragloom
from ragloom import Document, InputError

DOCS = [Document("mira", "Mira forged the silver key.", title="Notes")]


@pytest.fixture
def story(tmp_path: Path) -> Path:
    path = tmp_path / "story.db"
    with ragloom.Index(path, embedder=None) as index:
        index.add(DOCS)
    return path


def test_tokens_is_the_search_option_the_readme_names(story: Path) -> None:
    with ragloom.Index(story) as index:
        hits = index.search("silver key", tokens=True)
        assert hits[0].tokens and hits.total_tokens == hits[0].tokens
        legacy = index.search("silver key", with_tokens=True)  # the older name still works
        assert legacy[0].tokens == hits[0].tokens
        assert index.search("silver key")[0].tokens is None
        block = index.context("silver key", tokens=True)
        assert "silver key" in block.text


@pytest.mark.parametrize("call", ["search", "context", "search_many"])
def test_an_unknown_option_is_named_with_the_known_ones(story: Path, call: str) -> None:
    with ragloom.Index(story) as index, pytest.raises(InputError) as caught:
        if call == "search_many":
            index.search_many("silver", [{"collection": "default", "tokenz": True}])
        else:
            getattr(index, call)("silver", tokenz=True)
    error = caught.value
    assert "unknown search option 'tokenz'" in error.message
    assert "tokens" in error.hint and "top_k" in error.hint
    assert "SearchOptions" not in str(error) and "__init__" not in str(error)


def test_a_hit_calls_its_passage_text_in_the_library_and_json(story: Path) -> None:
    with ragloom.Index(story) as index:
        (hit,) = index.search("silver key")
    assert hit.text == "Mira forged the silver key."
    assert hit.to_dict()["text"] == hit.text and "chunk" not in hit.to_dict()
    done = subprocess.run(
        [sys.executable, "-m", "ragloom.cli", "--index", str(story), "search", "silver key"]
        + ["--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    (result,) = json.loads(done.stdout)["results"]
    assert result["text"] == hit.text and "chunk" not in result
