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
