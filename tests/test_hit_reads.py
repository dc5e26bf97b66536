"""Reading the hits' chunks: reader connections map the index file (a hit's pages are read
from the page cache in place, not copied in by a system call each), and every stored
metadata value comes back as it was given, including those the fast JSON parser refuses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import ragloom
from ragloom import Document
from ragloom.store.rows import from_json

RECORDS = [
    Document(
        "big",
        "Granary ledgers count every sack of barley twice.",
        metadata={
            "sacks": 2**70,  # beyond 64 bits: orjson would read a float, the standard parser an int
            "ratio": 0.1,
            "place": {"town": "Ypres", "tags": ["grain", "ledger"]},
        },
    ),
    Document("small", "The miller weighs barley at dawn.", metadata={"sacks": 3}),
    Document("plain", "Barley soup for the miller's supper."),
]


@pytest.mark.parametrize("read_only", [False, True])
def test_reader_connections_map_the_index_file(tmp_path: Path, read_only: bool) -> None:
    path = tmp_path / "i.db"
    with ragloom.Index(path, embedder=None) as index:
        index.add(RECORDS)
    with ragloom.Index(path, embedder=None, read_only=read_only) as index:
        assert index.search("barley", top_k=3, mode="lexical")
        with index.store.snapshot() as snap:
            mapped = snap.conn.execute("PRAGMA mmap_size").fetchone()[0]
    assert mapped >= 1 << 30


def test_hits_carry_their_metadata_as_stored(tmp_path: Path) -> None:
    path = tmp_path / "i.db"
    with ragloom.Index(path, embedder=None) as index:
        index.add(RECORDS)
    with ragloom.Index(path, embedder=None) as index:
        hits = {h.document_id: h for h in index.search("barley", top_k=3, mode="lexical")}
    assert hits["big"].metadata == RECORDS[0].metadata
    assert type(hits["big"].metadata["sacks"]) is int
    assert hits["small"].metadata == {"sacks": 3}
    assert hits["plain"].metadata == {}
    hits["small"].metadata["sacks"] = 4  # a hit's metadata is its own to change
    with ragloom.Index(path, embedder=None) as index:
        again = {h.document_id: h for h in index.search("barley", top_k=3, mode="lexical")}
    assert again["small"].metadata == {"sacks": 3}


@pytest.mark.parametrize(
    "text",
    [
        '{"group": 33, "shard": 327}',
        '{"sacks": 1180591620717411303424, "id": "0000000000000000000001"}',
        '{"ratio": NaN, "name": "Ypres \\u00e9"}',
        '{"a": {"b": [1, 2.5, null, true]}}',
        "{}",
    ],
)
def test_stored_metadata_parses_as_the_standard_parser_reads_it(text: str) -> None:
    parsed = from_json(text)
    expected = json.loads(text)
    assert repr(parsed) == repr(expected)  # repr: NaN != NaN, and 1e21 == 10**21


def test_every_hit_field_comes_from_its_candidate_or_its_chunk() -> None:
    """`hydrate` passes Hit's fields by position (a third of the keywords' cost, ten hits a
    search): each must land in the field of its name."""
    from dataclasses import fields

    from ragloom.engine.hydrate import hydrate
    from ragloom.retrieval.pipeline import Candidate
    from ragloom.store.records import StoredChunk
    from ragloom.types import Hit

    cand = Candidate(
        row_id=7, score=0.75, match="both", lexical_rank=2, lexical_score=3.5, dense_rank=4,
        dense_score=0.6, fused_score=0.7, rerank_score=0.9, hop=2,
    )  # fmt: skip
    chunk = StoredChunk(7, "doc-3", "doc", 3, "the text", 10, 18, {"k": 1}, "src.md", "T", "notes")
    (hit,) = hydrate([cand], {7: chunk})
    expected = {
        "rank": 1, "score": 0.75, "chunk_id": "doc-3", "document_id": "doc", "text": "the text",
        "start": 10, "end": 18, "source": "src.md", "title": "T", "metadata": {"k": 1},
        "collection": "notes", "match": "both", "lexical_rank": 2, "lexical_score": 3.5,
        "dense_rank": 4, "dense_score": 0.6, "fused_score": 0.7, "rerank_score": 0.9, "hop": 2,
        "tokens": None, "explain": None, "pending": False,
    }  # fmt: skip
    assert {f.name: getattr(hit, f.name) for f in fields(Hit)} == expected
