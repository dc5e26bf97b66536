"""Context packing and multi-collection search through a real index."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragloom import Document, Index, InputError
from ragloom.context import GROUNDING_INSTRUCTION, count_tokens

CHAPTER = "\n\n".join(
    [
        "Mira climbed the lighthouse stairs at dusk, counting each of the ninety steps.",
        "At the top she found the silver key hidden inside the lamp's brass housing.",
        "Below, Oren waited in the boat, cursing the tide and the cold northern wind.",
        "The drowned bell rang once, though no hand had touched its rope in years.",
    ]
)


@pytest.fixture
def index(tmp_path: Path):
    with Index(tmp_path / "ctx.db") as idx:
        idx.configure(chunking={"max_chars": 90, "overlap": 0, "min_chars": 10})
        idx.add([Document("ch1", CHAPTER, title="Chapter One", source="book/ch1.md")])
        idx.add(
            [Document("mira", "Mira Vale: lighthouse keeper, stubborn, afraid of bells.")],
            collection="characters",
        )
        idx.add(
            [Document("bells", "Rule: drowned bells ring only for the dead.")], collection="world"
        )
        yield idx


def test_numbered_cited_passages_with_instruction(index: Index):
    packed = index.context("silver key lamp", top_k=1)
    assert packed.text.startswith(GROUNDING_INSTRUCTION)
    assert "[1] source: book/ch1.md | title: Chapter One\n" in packed.text
    assert "silver key" in packed.text
    assert packed.tokens == count_tokens(packed.text)
    assert [p.number for p in packed.passages] == [1]


def test_adjacent_chunks_of_one_document_are_merged(index: Index):
    hits = index.search("Mira lighthouse silver key Oren", top_k=3)
    assert {h.chunk_id for h in hits} == {"ch1-0", "ch1-1", "ch1-2"}
    packed = index.pack([(None, hits)])
    assert len(packed.passages) == 1
    passage = packed.passages[0]
    assert passage.text == CHAPTER[passage.start : passage.end]
    assert sorted(passage.chunk_ids) == ["ch1-0", "ch1-1", "ch1-2"]
    assert packed.text.count("ninety steps") == 1


def test_separate_spans_stay_separate_passages(index: Index):
    hits = index.search("ninety steps drowned bell rope", top_k=2)
    assert {h.chunk_id for h in hits} == {"ch1-0", "ch1-3"}
    packed = index.pack([(None, hits)])
    assert [p.number for p in packed.passages] == [1, 2]
    assert "[2] source: book/ch1.md" in packed.text


def test_budget_is_respected_and_reported(index: Index):
    full = index.context("Mira lighthouse silver key Oren bell", top_k=4)
    assert full.omitted == 0
    small = index.context("Mira lighthouse silver key Oren bell", top_k=4, budget=full.tokens - 15)
    assert small.tokens <= full.tokens - 15
    assert small.tokens == count_tokens(small.text)
    assert small.passages[-1].truncated or small.omitted
    tiny = index.context("Mira lighthouse", top_k=4, budget=count_tokens(GROUNDING_INSTRUCTION) + 5)
    assert tiny.passages == [] and tiny.omitted >= 1
    with pytest.raises(InputError, match="budget"):
        index.context("Mira", budget=0)


def test_labelled_sections_from_several_collections(index: Index):
    packed = index.context(
        "Mira bells lighthouse",
        collections=[
            {"collection": "default", "top_k": 2, "label": "Previous Scene"},
            {"collection": "characters", "top_k": 1, "label": "Character Info"},
            {"collection": "world", "top_k": 1, "label": "WORLD"},
        ],
    )
    text = packed.text
    assert text.index("[Previous Scene]") < text.index("[Character Info]") < text.index("[WORLD]")
    assert [p.label for p in packed.passages][-2:] == ["Character Info", "WORLD"]
    assert [p.number for p in packed.passages] == list(range(1, len(packed.passages) + 1))


def test_search_many_groups_and_merges(index: Index):
    result = index.search_many(
        "Mira bells Oren lighthouse",
        [
            {"collection": "default", "top_k": 3, "label": "chapters"},
            {"collection": "characters", "top_k": 1},
            {"collection": "world", "top_k": 1, "label": "WORLD"},
        ],
    )
    assert [g.collection for g in result.groups] == ["default", "characters", "world"]
    assert [len(g.hits) for g in result.groups] == [3, 1, 1]
    assert [h.rank for h in result.merged][:3] == [1, 1, 1]  # interleaved by rank
    assert len(result.merged) == 5 and not result.degraded
    with pytest.raises(InputError, match="collection"):
        index.search_many("x", [{"top_k": 1}])


def test_a_block_without_passages_says_retrieval_found_nothing(index: Index):
    """An off-topic question: the block tells the model retrieval found nothing."""
    from ragloom.context import NOTHING_FOUND

    packed = index.context("quantum chromodynamics gluon", top_k=3)
    assert packed.passages == []
    assert packed.text == GROUNDING_INSTRUCTION + "\n\n" + NOTHING_FOUND
    assert packed.to_dict()["note"] == NOTHING_FOUND
    found = index.context("silver key lamp", top_k=1)
    assert found.note is None and NOTHING_FOUND not in found.text


def test_the_note_says_when_nothing_fitted_the_budget(index: Index):
    from ragloom.context import NONE_FITTED

    packed = index.context("silver key lamp", top_k=1, budget=count_tokens(GROUNDING_INSTRUCTION))
    assert packed.passages == [] and packed.omitted == 1
    assert packed.note == NONE_FITTED and packed.text.endswith(NONE_FITTED)


def test_passages_carry_page_and_section_from_chunk_metadata(tmp_path: Path):
    """What a converter puts on chunks (page or pages, section) reaches the passage."""
    with Index(tmp_path / "pages.db", embedder=None) as idx:
        idx.add(
            [
                Document("a", "The glass furnace runs hot.", metadata={"page": 3}),
                Document(
                    "b",
                    "Annealing cools the glass slowly.",
                    title="Glass",
                    metadata={"pages": [4, 5], "section": ["Methods", "Annealing"]},
                ),
                Document("c", "No page for the glass here.", metadata={"page": True}),
            ]
        )
        packed = idx.context("glass", top_k=3)
    by_id = {p.document_id: p for p in packed.passages}
    assert (by_id["a"].page, by_id["a"].pages, by_id["a"].section) == (3, None, None)
    assert (by_id["b"].page, by_id["b"].pages) == (4, [4, 5])
    assert by_id["b"].section == "Methods > Annealing"
    assert by_id["c"].page is None
    assert f"[{by_id['a'].number}] p. 3\n" in packed.text
    assert f"[{by_id['b'].number}] pp. 4-5 | title: Glass | section: Methods > Annealing\n" in (
        packed.text
    )
    assert by_id["b"].to_dict()["pages"] == [4, 5]
    assert by_id["b"].to_dict()["place"] == "pp. 4-5"
