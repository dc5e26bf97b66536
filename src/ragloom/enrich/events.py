"""Key events: short "who did what" phrases found with simple patterns ("Marcus died")."""

from __future__ import annotations

import re

# A named subject (up to three capitalised words) or "the" + up to two lowercase words.
_NAME = r"[A-Z][\w'\-]*(?:\s+[A-Z][\w'\-]*){0,2}"
_THING = r"[Tt]he\s+(?:[a-z][\w\-]*\s+){0,2}?[a-z][\w\-]*"
_SUBJECT = rf"(?P<subject>{_THING}|{_NAME})"
_OBJECT = rf"(?P<object>{_THING}|{_NAME})"

_INTRANSITIVE = (
    r"died|was\s+(?:killed|murdered|slain|born|arrested|captured|kidnapped|poisoned|"
    r"destroyed|crowned|banished|exiled)|vanished|disappeared|escaped|exploded|"
    r"collapsed|burned\s+down|burnt\s+down|caught\s+fire|sank|crashed|shattered|"
    r"fell\s+in\s+battle|was\s+never\s+seen\s+again"
)
_TRANSITIVE = r"killed|murdered|married|betrayed|kidnapped|stabbed|shot|poisoned|rescued"

_EVENT = re.compile(
    rf"{_SUBJECT}\s+(?:(?P<act>{_TRANSITIVE})\s+{_OBJECT}|(?P<fate>{_INTRANSITIVE}))\b"
)
# Words that open a sentence without naming anyone ("Then Marcus died" names Marcus).
_LEADING_WORDS = """then when but and suddenly finally later so yet after before as while
meanwhile there here that this once soon at last now"""
_LEADING = frozenset(_LEADING_WORDS.split())
_PRONOUN_WORDS = "he she they it i we you him her them"
_PRONOUNS = frozenset(_PRONOUN_WORDS.split())


def key_events(text: str) -> list[str]:
    """Events like "Marcus died" or "the bridge exploded", in order, without repeats."""
    found: dict[str, None] = {}
    for m in _EVENT.finditer(text):
        subject = _clean(m.group("subject"))
        if not subject:
            continue
        if m.group("act"):
            obj = _clean(m.group("object"))
            if not obj:
                continue
            event = f"{subject} {m.group('act')} {obj}"
        else:
            event = f"{subject} {' '.join(m.group('fate').split())}"
        found.setdefault(event, None)
    return list(found)


def _clean(phrase: str) -> str:
    """Drop sentence openers ("Then"), refuse pronouns, lowercase a leading "The"."""
    words = phrase.split()
    while words and words[0].lower() in _LEADING:
        words.pop(0)
    if not words or (len(words) == 1 and words[0].lower() in _PRONOUNS):
        return ""
    if words[0] == "The":
        words[0] = "the"
    if words[0] == "the" and len(words) == 1:
        return ""
    return " ".join(words)
