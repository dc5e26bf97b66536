"""Big text files are indexed in parts: bounded memory, exact offsets, stable ids."""

from __future__ import annotations

import random
from pathlib import Path

from ragloom import Document, Index
from ragloom.loading import ReadPolicy
from ragloom.loading.parts import cut_point, text_parts
from ragloom.loading.run import batches

PART = 20_000
POLICY = ReadPolicy(part_chars=PART)


def _paragraphs(seed: int, count: int) -> str:
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(3000)]
    return "\n\n".join(
        " ".join(rng.choices(words, k=rng.randint(20, 120))) + "." for _ in range(count)
    )


def test_cut_points_prefer_paragraphs_then_lines_sentences_spaces() -> None:
    assert cut_point("a" * 90 + "\n\n" + "b" * 20, 100) == 92
    assert cut_point("a" * 85 + "\n" + "b" * 9 + ". " + "c" * 20, 100) == 86
    assert cut_point("a" * 85 + ". " + "b" * 30, 100) == 87
    assert cut_point("a" * 95 + " " + "b" * 20, 100) == 96
    assert cut_point("x" * 300, 100) == 100  # nothing to cut at: a hard cut
    assert cut_point("a\n\n" + "b" * 200, 100) == 100  # a break too early is not taken


def test_parts_cover_the_text_exactly() -> None:
    text = _paragraphs(1, 400)
    pieces = [text[i : i + 7777] for i in range(0, len(text), 7777)]
    parts = list(text_parts(pieces, PART))
    assert "".join(t for _, t in parts) == text
    assert all(len(t) <= PART for _, t in parts) and len(parts) > 2
    assert [o for o, _ in parts] == [sum(len(t) for _, t in parts[:i]) for i in range(len(parts))]
    assert list(text_parts([""], PART)) == [(0, "")]


def test_a_big_file_becomes_parts_with_exact_offsets(tmp_path: Path) -> None:
    text = "# Chronicle\n\n" + _paragraphs(2, 500)
    path = tmp_path / "big.md"
    path.write_text(text)
    with Index(tmp_path / "i.db") as index:
        report = index.index_path(tmp_path, policy=POLICY)
        docs = {d.doc_id: d for d in index.documents()}
        count = len(docs)
        assert report.documents == count > 3
        assert sorted(docs) == sorted(["big.md", *(f"big.md#{n}" for n in range(2, count + 1))])
        for doc in docs.values():
            assert doc.title == "Chronicle" and doc.metadata["path"] == "big.md"
            stored = index.document_text(doc.doc_id)
            offset = doc.metadata["offset"]
            assert text[offset : offset + len(stored)] == stored
        for hit in index.search("w17 w2048 w999", top_k=20):
            offset = docs[hit.document_id].metadata["offset"]
            assert text[offset + hit.start : offset + hit.end] == hit.text
        again = index.index_path(tmp_path, policy=POLICY)
        assert (again.documents, again.unchanged) == (0, count)


def test_appending_reindexes_only_the_last_parts_and_shrinking_drops_parts(tmp_path) -> None:
    path = tmp_path / "log.txt"
    path.write_text(_paragraphs(3, 300))
    with Index(tmp_path / "i.db") as index:
        first = index.index_path(path, policy=POLICY)
        with path.open("a") as handle:
            handle.write("\n\nappended paragraph about the zebrafish.")
        grown = index.index_path(path, policy=POLICY)
        assert grown.documents <= 2 and grown.unchanged >= first.documents - 1
        assert index.search("zebrafish")[0].metadata["part"] >= first.documents - 1
        path.write_text("a short log now: only pelicans.")
        index.index_path(path, policy=POLICY)
        assert [d.doc_id for d in index.documents()] == [str(path.resolve())]
        assert index.search("pelicans")[0].text == "a short log now: only pelicans."


def test_batches_are_bounded_in_characters_and_count() -> None:
    docs = [Document(f"d{i}", "x" * size) for i, size in enumerate([10, 500, 30, 700, 5, 5, 5])]
    sizes = [[len(d.text) for d in batch] for batch in batches(docs, max_chars=600)]
    assert sizes == [[10, 500, 30, 700], [5, 5, 5]]  # a batch closes once it reaches the bound
    assert [len(b) for b in batches(docs, max_chars=10**9, max_documents=3)] == [3, 3, 1]
