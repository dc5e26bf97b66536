"""How documents are grouped into write batches (`ragloom.engine.documents.checked_batches`):
by the collection each goes to, cut at a count or a size, full batches as soon as they fill."""

from __future__ import annotations

import pytest

from ragloom import Document
from ragloom.engine.documents import checked_batches
from ragloom.errors import InputError


def shape(batches) -> list[tuple[str, list[str]]]:
    return [(name, [doc.id for doc, _ in batch]) for name, batch in batches]


def test_documents_go_to_their_own_collection_or_the_default() -> None:
    docs = [
        Document("a", "one"),
        Document("b", "two", collection="notes"),
        Document("c", "three"),
        Document("d", "four", collection="notes"),
    ]
    assert shape(checked_batches(docs, "default", most=10, most_chars=1000)) == [
        ("default", ["a", "c"]),
        ("notes", ["b", "d"]),
    ]


def test_a_batch_is_cut_at_its_count_or_its_size_and_handed_on_when_full() -> None:
    docs = [Document(str(i), "x" * 40) for i in range(7)]
    assert shape(checked_batches(docs, "c", most=3, most_chars=10_000)) == [
        ("c", ["0", "1", "2"]),
        ("c", ["3", "4", "5"]),
        ("c", ["6"]),
    ]
    assert shape(checked_batches(docs, "c", most=100, most_chars=100)) == [
        ("c", ["0", "1", "2"]),  # 120 characters reach the limit of 100
        ("c", ["3", "4", "5"]),
        ("c", ["6"]),
    ]


def test_metadata_comes_as_canonical_json() -> None:
    [(_, [(_, metadata)])] = checked_batches(
        [Document("a", "t", metadata={"b": 1, "a": "é"})], "c", most=10, most_chars=100
    )
    assert metadata == '{"a": "é", "b": 1}'


def test_full_batches_are_handed_on_before_a_bad_document_is_met() -> None:
    """Batches stream: what filled before the bad document was already handed on (and
    written); the error names the document that is wrong."""
    docs = iter([Document("a", "one"), Document("b", "two"), Document("c", "\ud800")])
    batches = checked_batches(docs, "c", most=2, most_chars=1000)
    assert shape([next(batches)]) == [("c", ["a", "b"])]
    with pytest.raises(InputError, match="'c'.*lone surrogate"):
        next(batches)


def test_a_non_document_is_refused_by_type() -> None:
    with pytest.raises(InputError, match="expected a ragloom.Document, got dict"):
        list(checked_batches([{"id": "a", "text": "t"}], "c", most=10, most_chars=100))
