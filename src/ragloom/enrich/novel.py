"""The novel-writing enrichers: characters, scene type, tone, importance and key events.

Each is a small callable `(document, span) -> dict` (see `ragloom.enrich`) reading only the
chunk's text, so the same passage always gets the same metadata. `novel_enrichers()`
returns the whole set for `Index.add(..., enrichers=...)` / `Index.index_path(...)`.

Importance (1-10) is a heuristic over a base of 4, so the top score is exactly 10 (see
docs/records-and-enrichment.md): +1 when any character is mentioned, +1 more when more than
two are, +2 for a revelation, +1 for dialogue, +1 for action; clamped to 1..10.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from ragloom.enrich import Enricher
from ragloom.enrich.characters import CharacterList, CharacterMatcher
from ragloom.enrich.cues import LEXICON_VERSION, QUOTE, SCENE_CUES, SPEECH, TONE_CUES, count
from ragloom.enrich.events import key_events
from ragloom.errors import InputError
from ragloom.types import ChunkSpan, Document

SCENE_TYPES = ("dialogue", "action", "description", "introspection", "flashback", "revelation")
TONES = ("tense", "sad", "happy", "angry", "mysterious", "romantic")
NEUTRAL_TONE = "neutral"  # no tone cue at all
DEFAULT_IMPORTANCE_BASE = 4
# Ties go to the rarer, more telling label first.
_SCENE_PRIORITY = ("revelation", "flashback", "dialogue", "action", "introspection")
_TONE_PRIORITY = ("tense", "angry", "sad", "mysterious", "romantic", "happy")


def scene_scores(text: str) -> dict[str, int]:
    """Cue counts per scene type (dialogue: quoted lines, plus speech tags when quoted)."""
    quotes = count(QUOTE, text)
    scores = {name: count(pattern, text) for name, pattern in SCENE_CUES.items()}
    scores["dialogue"] = quotes + (count(SPEECH, text) if quotes else 0)
    return scores


def scene_traits(text: str) -> set[str]:
    """Every scene type with at least one cue in the passage."""
    return {name for name, score in scene_scores(text).items() if score > 0}


def scene_type(text: str) -> str:
    """The passage's dominant scene type; "description" when nothing else shows more."""
    scores = scene_scores(text)
    best = max(_SCENE_PRIORITY, key=lambda name: (scores[name], -_SCENE_PRIORITY.index(name)))
    return best if scores[best] and scores[best] >= scores["description"] else "description"


def tone(text: str) -> str:
    """The passage's dominant emotional tone; "neutral" when no tone cue appears."""
    scores = {name: count(pattern, text) for name, pattern in TONE_CUES.items()}
    best = max(_TONE_PRIORITY, key=lambda name: (scores[name], -_TONE_PRIORITY.index(name)))
    return best if scores[best] else NEUTRAL_TONE


def importance(characters: int, traits: set[str], base: int = DEFAULT_IMPORTANCE_BASE) -> int:
    """The importance heuristic: base +1 any character, +1 more than two, +2 revelation,
    +1 dialogue, +1 action, clamped to 1..10."""
    score = base
    score += (characters >= 1) + (characters > 2)
    score += 2 * ("revelation" in traits) + ("dialogue" in traits) + ("action" in traits)
    return max(1, min(10, score))


class CharacterEnricher:
    """`characters`: the cast members a chunk mentions (whole words, any case)."""

    name: ClassVar[str] = "characters"

    def __init__(self, characters: CharacterList) -> None:
        self.matcher = CharacterMatcher(characters)

    def __call__(self, document: Document, span: ChunkSpan) -> dict[str, Any]:
        return {"characters": self.matcher.find(span.text)}

    def fingerprint(self) -> str:
        """The cast, so changing it re-enriches documents on their next indexing."""
        return json.dumps(self.matcher.cast, sort_keys=True)


class _TextEnricher:
    """An enricher whose one field, `name`, is `rule` of the chunk's text alone; `version`
    names the rule's revision, so a new one re-enriches documents."""

    name: ClassVar[str]
    rule: ClassVar[staticmethod[[str], Any]]
    version: ClassVar[str]

    def __call__(self, document: Document, span: ChunkSpan) -> dict[str, Any]:
        return {self.name: self.rule(span.text)}

    def fingerprint(self) -> str:
        return self.version


class SceneTypeEnricher(_TextEnricher):
    """`scene_type`: dialogue, action, description, introspection, flashback or revelation."""

    name = "scene_type"
    rule = staticmethod(scene_type)
    version = f"lexicon-{LEXICON_VERSION}"


class ToneEnricher(_TextEnricher):
    """`tone`: tense, sad, happy, angry, mysterious, romantic (or neutral)."""

    name = "tone"
    rule = staticmethod(tone)
    version = f"lexicon-{LEXICON_VERSION}"


class ImportanceEnricher:
    """`importance`: 1-10 from the characters present and the scene's traits."""

    name: ClassVar[str] = "importance"

    def __init__(self, characters: CharacterList = (), base: int = DEFAULT_IMPORTANCE_BASE):
        if isinstance(base, bool) or not isinstance(base, int):
            raise InputError(f"importance base must be an integer, got {base!r}")
        self.matcher = CharacterMatcher(characters)
        self.base = base

    def __call__(self, document: Document, span: ChunkSpan) -> dict[str, Any]:
        found = len(self.matcher.find(span.text))
        return {"importance": importance(found, scene_traits(span.text), self.base)}

    def fingerprint(self) -> str:
        cast = json.dumps(self.matcher.cast, sort_keys=True)
        return f"lexicon-{LEXICON_VERSION} base-{self.base} {cast}"


class KeyEventEnricher(_TextEnricher):
    """`key_events`: phrases like "Marcus died" or "the bridge exploded"."""

    name = "key_events"
    rule = staticmethod(key_events)
    version = "patterns-1"


def novel_enrichers(
    characters: CharacterList = (), importance_base: int = DEFAULT_IMPORTANCE_BASE
) -> list[Enricher]:
    """The novel-writing set: characters, scene_type, tone, importance, key_events."""
    return [
        CharacterEnricher(characters),
        SceneTypeEnricher(),
        ToneEnricher(),
        ImportanceEnricher(characters, importance_base),
        KeyEventEnricher(),
    ]


__all__ = [
    "CharacterEnricher",
    "ImportanceEnricher",
    "KeyEventEnricher",
    "SCENE_TYPES",
    "SceneTypeEnricher",
    "TONES",
    "ToneEnricher",
    "importance",
    "key_events",
    "novel_enrichers",
    "scene_scores",
    "scene_traits",
    "scene_type",
    "tone",
]
