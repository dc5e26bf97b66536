"""The novel-writing enrichers on short passages written for these tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragloom import Document, Index, InputError
from ragloom.enrich import enrichers_fingerprint
from ragloom.enrich.characters import CharacterMatcher
from ragloom.enrich.novel import (
    CharacterEnricher,
    ImportanceEnricher,
    KeyEventEnricher,
    SceneTypeEnricher,
    ToneEnricher,
    importance,
    key_events,
    novel_enrichers,
    scene_traits,
    scene_type,
    tone,
)
from ragloom.types import ChunkSpan

CAST = ["Anna", "Tom", "Marcus", "Lady Mira"]

SCENES = {
    "dialogue": '"Where were you last night?" Anna asked.\n"Out," Tom replied. "Just out."',
    "action": "Marcus grabbed the sword and lunged at the guard, ducked the blow and ran for "
    "the gate.",
    "description": "The valley stretched beneath a pale sky, its river silver in the morning "
    "sunlight.",
    "introspection": "She wondered whether she should have stayed, and felt the old guilt "
    "settle in her chest.",
    "flashback": "Years ago, when she was young, Anna used to climb the old oak. She "
    "remembered the smell of rain.",
    "revelation": "Then Tom realized the truth: the letter was written by his own brother, "
    "who had kept the secret all along.",
}

TONES = {
    "tense": "Her heart pounded. Footsteps on the stairs; she froze and held her breath.",
    "sad": "He wept at the funeral, tears running down his face, lost in grief.",
    "happy": "They laughed and cheered, grinning with delight at the news.",
    "angry": "He glared at her, furious, and slammed the door in a rage.",
    "mysterious": "A strange symbol glowed in the fog, and a cloaked figure vanished into "
    "the shadows.",
    "romantic": "He kissed her softly; she blushed, lost in his tender gaze.",
    "neutral": "The meeting is on Tuesday at noon in the second room.",
}


def span(text: str) -> ChunkSpan:
    return ChunkSpan(text, 0, len(text))


def enrich(text: str, characters: list[str] | None = None) -> dict:
    doc = Document("d", text)
    meta: dict = {}
    for enricher in novel_enrichers(characters if characters is not None else CAST):
        meta.update(enricher(doc, span(text)))
    return meta


# --- characters -------------------------------------------------------------------------


def test_characters_are_whole_words_in_any_case_in_order_of_mention() -> None:
    matcher = CharacterMatcher(CAST)
    text = "TOM saw anna. Annabel and Tommy waved. Anna's boat; lady  mira\nwatched."
    assert matcher.find(text) == ["Tom", "Anna", "Lady Mira"]
    assert matcher.find("Nobody here, not even Marcuss.") == []


def test_characters_with_aliases_map_to_the_canonical_name() -> None:
    matcher = CharacterMatcher({"Elizabeth Bennet": ["Lizzy", "Eliza"], "Darcy": []})
    assert matcher.find("Lizzy laughed; Mr. Darcy did not. Eliza left.") == [
        "Elizabeth Bennet",
        "Darcy",
    ]


def test_empty_or_bad_cast() -> None:
    assert CharacterMatcher([]).find("Anna") == []
    with pytest.raises(InputError):
        CharacterMatcher("Anna")  # type: ignore[arg-type]
    with pytest.raises(InputError):
        CharacterMatcher(["  "])


def test_character_enricher_output() -> None:
    enricher = CharacterEnricher(CAST)
    assert enricher.name == "characters"
    assert enricher(Document("d", "x"), span("Marcus met Anna.")) == {
        "characters": ["Marcus", "Anna"]
    }


# --- scene type and tone ------------------------------------------------------------------


@pytest.mark.parametrize("expected", sorted(SCENES))
def test_scene_type(expected: str) -> None:
    assert scene_type(SCENES[expected]) == expected


def test_scene_type_defaults_to_description() -> None:
    assert scene_type("The meeting is on Tuesday.") == "description"


def test_scene_traits_list_everything_present() -> None:
    text = '"Run!" Tom shouted, and they ran as the tower exploded.'
    assert {"dialogue", "action"} <= scene_traits(text)
    assert "dialogue" not in scene_traits("He said nothing at all.")  # no quoted speech


@pytest.mark.parametrize("expected", sorted(TONES))
def test_tone(expected: str) -> None:
    assert tone(TONES[expected]) == expected


# --- importance --------------------------------------------------------------------------


def test_importance_heuristic_and_clamping() -> None:
    assert importance(0, set()) == 4
    assert importance(1, set()) == 5
    assert importance(3, set()) == 6
    assert importance(2, {"revelation"}) == 7
    assert importance(3, {"revelation", "dialogue", "action"}) == 10
    assert importance(3, {"revelation", "dialogue", "action"}, base=9) == 10
    assert importance(0, set(), base=-5) == 1
    assert importance(0, {"description", "flashback"}) == 4


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (SCENES["description"], 4),  # base
        (SCENES["flashback"], 5),  # + one character
        (SCENES["dialogue"], 6),  # + character + dialogue
        (SCENES["revelation"], 7),  # + character + revelation
        ('"Now!" Anna, Tom and Marcus ran as the secret was revealed.', 10),
    ],
)
def test_importance_enricher(text: str, expected: int) -> None:
    assert ImportanceEnricher(CAST)(Document("d", text), span(text)) == {"importance": expected}


def test_importance_base_is_configurable_and_checked() -> None:
    text = SCENES["description"]
    assert ImportanceEnricher(CAST, base=1)(Document("d", text), span(text))["importance"] == 1
    with pytest.raises(InputError):
        ImportanceEnricher(CAST, base=2.5)  # type: ignore[arg-type]


# --- key events ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "events"),
    [
        ("Then Marcus died in the night.", ["Marcus died"]),
        ("The old tower exploded at dawn.", ["the old tower exploded"]),
        (
            "Suddenly the bridge collapsed and Elena Voss was arrested.",
            ["the bridge collapsed", "Elena Voss was arrested"],
        ),
        ("Anna married Tom Baker in spring.", ["Anna married Tom Baker"]),
        (
            "Lady Mira betrayed the king. Lady Mira betrayed the king.",
            ["Lady Mira betrayed the king"],
        ),
        ("He died. She was killed. It exploded.", []),
        ("The weather was fine and nothing happened.", []),
    ],
)
def test_key_events(text: str, events: list[str]) -> None:
    assert key_events(text) == events


# --- the set ------------------------------------------------------------------------------


def test_novel_enrichers_together() -> None:
    meta = enrich(SCENES["revelation"])
    assert meta == {
        "characters": ["Tom"],
        "scene_type": "revelation",
        "tone": "neutral",
        "importance": 7,
        "key_events": [],
    }
    assert enrich("Marcus died in the fire.")["key_events"] == ["Marcus died"]


def test_names_and_fingerprints() -> None:
    enrichers = novel_enrichers(CAST)
    assert [e.name for e in enrichers] == [  # type: ignore[attr-defined]
        "characters",
        "scene_type",
        "tone",
        "importance",
        "key_events",
    ]
    assert [type(e) for e in enrichers] == [
        CharacterEnricher,
        SceneTypeEnricher,
        ToneEnricher,
        ImportanceEnricher,
        KeyEventEnricher,
    ]
    same = enrichers_fingerprint(novel_enrichers(list(CAST)))
    assert enrichers_fingerprint(enrichers) == same
    assert enrichers_fingerprint(novel_enrichers(["Anna"])) != same
    assert enrichers_fingerprint(novel_enrichers(CAST, importance_base=5)) != same


def test_enriched_chunks_carry_the_metadata(tmp_path: Path) -> None:
    chapter = (
        "Years ago Anna used to walk by the river.\n\n***\n\n"
        '"It was you all along," Tom said. Marcus drew his sword and lunged. '
        "Lady Mira screamed as the bridge exploded."
    )
    with Index(tmp_path / "novel.db") as index:
        index.add([Document("ch1", chapter)], "chapters", enrichers=novel_enrichers(CAST))
        hits = index.search("bridge exploded", top_k=1, collection="chapters")
        hits += index.search("walk by the river", top_k=1, collection="chapters")
    assert [h.chunk_id for h in hits] == ["ch1-1", "ch1-0"]
    meta = hits[0].metadata
    assert meta["characters"] == ["Tom", "Marcus", "Lady Mira"]
    assert meta["importance"] == 10
    assert meta["key_events"] == ["the bridge exploded"]
    assert meta["scene_type"] in ("dialogue", "action", "revelation")
    assert hits[1].metadata["scene_type"] == "flashback"
    assert hits[1].metadata["characters"] == ["Anna"]
