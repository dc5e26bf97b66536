"""Stop-word lists. `english` is Lucene's default English set, the one BEIR baselines use."""

from __future__ import annotations

_LUCENE_ENGLISH = """a an and are as at be but by for if in into is it no not of on or such that
the their then there these they this to was will with"""
ENGLISH = frozenset(_LUCENE_ENGLISH.split())

STOPWORD_LISTS: dict[str, frozenset[str]] = {"english": ENGLISH, "none": frozenset()}


def stopwords_for(name: str) -> frozenset[str]:
    """Look up a named stop-word list; unknown names are an error, not an empty list."""
    from ragloom.errors import InputError

    try:
        return STOPWORD_LISTS[name]
    except KeyError:
        known = ", ".join(sorted(STOPWORD_LISTS))
        raise InputError(f"unknown stop-word list {name!r}", f"choose one of: {known}") from None
