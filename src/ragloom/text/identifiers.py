"""Identifier splitting for code search: safeFetch, safe_fetch, SAFE_FETCH -> safe fetch."""

from __future__ import annotations

import re

# An acronym (ending before a capitalised word: XML|Http), or a capitalised or lowercase
# word. Digits never split a part: they stay with their letters (HTTP2, base64, 1d, md5sum).
_ASCII_PART = re.compile(r"[0-9]*[A-Z]+[0-9]*(?![a-z])|[A-Z]?[a-z0-9]+")


def identifier_parts(word: str) -> list[str]:
    """Lowercase parts of one identifier, split at underscores and case changes."""
    if word.isascii():
        return [part.lower() for part in _ASCII_PART.findall(word)]
    return [part.casefold() for part in _unicode_parts(word)]


def identifier_terms(word: str) -> list[str]:
    """What an identifier is indexed as: the joined lowercase form, then each part.

    `safeFetch` -> [safefetch, safe, fetch], so `safe_fetch` (same joined form) matches it
    best, and `safe fetch` still matches its parts. A one-part word is just that part.
    """
    parts = identifier_parts(word)
    return ["".join(parts), *parts] if len(parts) > 1 else parts


def _unicode_parts(word: str) -> list[str]:
    """`identifier_parts` for any script: the same rules, character by character."""
    parts: list[str] = []
    current: list[str] = []
    letter = ""  # the last letter of the current part ("" while it holds only digits)
    for i, ch in enumerate(word):
        if ch == "_" or not ch.isalnum():
            if current:
                parts.append("".join(current))
            current, letter = [], ""
            continue
        if current and ch.isupper() and _hump(letter, word[i + 1 : i + 2]):
            parts.append("".join(current))
            current, letter = [], ""
        current.append(ch)
        if ch.isalpha():
            letter = ch
    if current:
        parts.append("".join(current))
    return parts


def _hump(letter: str, following: str) -> bool:
    """Whether an uppercase letter opens a new part after `letter` (camelCase, XMLHttp)."""
    capitalised = bool(following) and following.isalpha() and not following.isupper()
    if not letter:  # only digits so far: 12Monkeys splits, 1D does not
        return capitalised
    return not letter.isupper() or capitalised
