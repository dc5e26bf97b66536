"""A selective filter's chunks, listed once per segment and filter and remembered, are scored
again exactly on every later search: each eligible chunk that matches comes back, for each
filter, and a deleted one no longer does."""

from __future__ import annotations

from pathlib import Path

from ragloom import Document, Index


def _docs(count: int) -> list[Document]:
    words = ["river", "stone", "lantern", "harbour", "meadow", "copper", "willow"]
    return [
        Document(
            f"d{i}",
            f"alpha {' '.join(words[(i + j) % 7] for j in range(1 + i % 5))} note {i}",
            metadata={"g": i % 100},
        )
        for i in range(count)
    ]


def test_a_selective_filter_scores_its_listed_chunks_again_exactly(tmp_path: Path) -> None:
    with Index(tmp_path / "listed.db") as index:
        index.add(_docs(3000))
        for _ in range(2):  # the second round reads the remembered lists
            for group in (7, 8):
                hits = index.search("alpha", top_k=50, mode="lexical", filters={"g": group})
                assert sorted(h.document_id for h in hits) == sorted(
                    f"d{i}" for i in range(group, 3000, 100)
                )
                assert all(h.metadata["g"] == group for h in hits)
        hits = index.search("alpha copper", top_k=50, mode="lexical", filters={"g": 7})
        gone = hits[0].document_id
        index.delete(gone)
        hits = index.search("alpha", top_k=50, mode="lexical", filters={"g": 7})
        assert len(hits) == 29 and gone not in {h.document_id for h in hits}
