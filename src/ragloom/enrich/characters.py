"""Which characters a passage mentions: whole words, any case, names and their aliases."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from ragloom.errors import InputError

CharacterList = Sequence[str] | Mapping[str, Sequence[str]]


def normalize_characters(characters: CharacterList) -> dict[str, tuple[str, ...]]:
    """{name: (name, aliases...)} from a list of names or a {name: [aliases]} mapping."""
    if isinstance(characters, str):
        raise InputError("characters must be a list of names, not one string")
    pairs = (
        [(name, [name, *aliases]) for name, aliases in characters.items()]
        if isinstance(characters, Mapping)
        else [(name, [name]) for name in characters]
    )
    out: dict[str, tuple[str, ...]] = {}
    for name, spellings in pairs:
        if isinstance(spellings[1:], str) or not all(isinstance(s, str) for s in spellings):
            raise InputError(f"character {name!r}: names and aliases must be strings")
        kept = tuple(s.strip() for s in spellings if s.strip())
        if not kept:
            raise InputError("a character name must not be empty")
        out[kept[0]] = kept
    return out


class CharacterMatcher:
    """Finds the characters of a fixed cast in passages (one compiled pattern)."""

    def __init__(self, characters: CharacterList) -> None:
        self.cast = normalize_characters(characters)
        self._canonical: dict[str, str] = {}
        spellings: list[str] = []
        for name, aliases in self.cast.items():
            for alias in aliases:
                key = _key(alias)
                self._canonical.setdefault(key, name)
                spellings.append(alias)
        spellings.sort(key=len, reverse=True)  # "Anna Karenina" before "Anna"
        body = "|".join(r"\s+".join(map(re.escape, s.split())) for s in spellings)
        self._pattern = re.compile(rf"(?<!\w)(?:{body})(?!\w)", re.IGNORECASE) if body else None

    def find(self, text: str) -> list[str]:
        """Canonical names mentioned in `text`, in order of first mention."""
        if self._pattern is None:
            return []
        found: dict[str, None] = {}
        for m in self._pattern.finditer(text):
            found.setdefault(self._canonical[_key(m.group())], None)
        return list(found)


def _key(spelling: str) -> str:
    """Case- and spacing-insensitive form of a name, to map a match back to its character."""
    return " ".join(spelling.casefold().split())
