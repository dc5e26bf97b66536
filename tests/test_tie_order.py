"""One total order for ties: hits with equal scores rank by a stable key (document id, then
chunk number), never by storage row ids, so the same content gives the same hits in the same
order on SQLite and PostgreSQL, whatever order it was written in."""

from __future__ import annotations

from pathlib import Path

import pytest

import ragloom
from ragloom import Document

TEXT = "The drowned bell rings only for the dead of Greyhaven."
IDS = ["m", "c", "x", "a", "q", "b"]  # written in this order: row ids follow it


def _history(index: ragloom.Index, reverse: bool) -> None:
    """The same final content, written in two different orders (and one rewrite)."""
    ids = list(reversed(IDS)) if reverse else IDS
    index.add([Document(i, TEXT) for i in ids])
    index.add([Document("other", "A lighthouse keeper forged a silver key.")])
    index.delete(ids[0])
    index.add([Document(ids[0], TEXT)])  # back, as the newest row


@pytest.mark.parametrize(
    "options",
    [{"top_k": 6}, {"top_k": 3}, {"top_k": 2, "mode": "lexical"}, {"top_k": 4, "fusion": "rrf"}],
)
def test_ties_rank_by_document_id_on_both_stores(tmp_path: Path, pg_url, options) -> None:
    orders = []
    for location in (tmp_path / "a.db", tmp_path / "b.db", pg_url(), pg_url()):
        reverse = len(orders) % 2 == 1
        with ragloom.Index(location, embedder="local") as index:
            _history(index, reverse)
            hits = index.search("drowned bell dead", **options)
            assert len({h.score for h in hits}) == 1  # all tied, and shown so
            orders.append([h.document_id for h in hits])
    expected = sorted(IDS)[: options["top_k"]]
    assert orders == [expected] * 4, orders
