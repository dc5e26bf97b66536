"""Reads never write, and what they answer is what was asked: a search of a missing
collection is an error naming it (and creates nothing), a context over several collections
that hold the same record shows the passage once, a query of punctuation alone finds nothing
even from a dense model without a floor."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import ragloom
from ragloom import Document, NotFound
from tests.embed_server import EmbedServer

RECORD = Document("bees", "The hives hum all summer; the bees sleep in winter.", title="Bees")


def _cli(index: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ragloom.cli", "--index", str(index), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("flags", [["--k1", "1.2"], ["--b", "0.5"], []])
def test_search_of_a_missing_collection_names_it_and_creates_nothing(
    tmp_path: Path, flags: list[str]
) -> None:
    path = tmp_path / "i.db"
    with ragloom.Index(path, embedder=None) as index:
        index.add([RECORD], "notes")
    done = _cli(path, "search", "hives", "--collection", "typo", *flags)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "'typo'" in done.stderr and "notes" in done.stderr, done.stderr
    with ragloom.Index(path) as index:
        assert index.collections() == ["notes"]
        with pytest.raises(NotFound):
            index.search("hives", collection="typo", bm25={"k1": 1.2})


def test_partial_bm25_keeps_the_collections_other_setting(tmp_path: Path) -> None:
    with ragloom.Index(tmp_path / "i.db", embedder=None) as index:
        index.configure("notes", bm25={"k1": 0.5, "b": 0.9})
        index.add([RECORD, Document("x", "Winter hives and winter bees and winter.")], "notes")
        both = index.search("winter hives", collection="notes", bm25=ragloom.BM25Params(1.2, 0.9))
        partial = index.search("winter hives", collection="notes", bm25={"k1": 1.2})
        assert [h.lexical_score for h in partial] == [h.lexical_score for h in both]
        with pytest.raises(ragloom.InputError, match="bm25"):
            index.search("winter", collection="notes", bm25={"k": 1.2})
        done = _cli(index.path, "search", "winter hives", "--collection", "notes", "--k1", "1.2")
        assert done.returncode == 0, done.stderr


def test_context_over_collections_holding_one_record_shows_it_once(tmp_path: Path) -> None:
    path = tmp_path / "i.db"
    with ragloom.Index(path, embedder=None) as index:
        index.add([RECORD], "chapters")
        index.add([RECORD, Document("other", "Honey is stored in combs.")], "notes")
        block = index.context(
            "hives bees", collections=[{"collection": "chapters"}, {"collection": "notes"}]
        )
        assert block.text.count("The hives hum all summer") == 1, block.text
        assert [p.collection for p in block.passages].count("chapters") == 1
    done = _cli(path, "context", "hives bees", "--section", "chapters", "--section", "notes")
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("The hives hum all summer") == 1, done.stdout


def test_punctuation_only_query_finds_nothing_from_a_service_model(tmp_path: Path) -> None:
    with EmbedServer() as server:
        spec = f"openai:no-floor-model@{server.url}/v1"
        with ragloom.Index(tmp_path / "i.db", embedder=spec) as index:
            index.add([RECORD, Document("other", "Honey is stored in combs.")])
            assert index.search("hives")  # the service answers
            for query in ("???", "?!", " ... ", "-- //"):
                hits = index.search(query)
                assert list(hits) == [], (query, [(h.chunk_id, h.score) for h in hits])
                assert list(index.search(query, mode="dense")) == []
