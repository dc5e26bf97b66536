"""Where a query's terms occur in a text: character spans for highlighting matched words.

Each word of the text is analysed as the index analyses it (folding, stemming, identifier
splitting), so "running" is marked for the query "runs" exactly when BM25 matched it.
"""

from __future__ import annotations

import re

from ragloom.text.tokenize import Tokenizer

_WORD = re.compile(r"[^\W_]+")
_IDENTIFIER = re.compile(r"\w+")


def match_spans(tokenizer: Tokenizer, terms: list[str], text: str) -> list[tuple[int, int]]:
    """(start, end) offsets into `text` of the words whose index terms are among the query's
    `terms` (as `tokenizer` analyses the query)."""
    wanted = set(terms)
    if not wanted:
        return []
    pattern = _IDENTIFIER if tokenizer.config.split_identifiers else _WORD
    spans = []
    for match in pattern.finditer(text):
        if wanted.intersection(tokenizer.terms(match.group())):
            spans.append(match.span())
    return spans


def matched_terms(tokenizer: Tokenizer, terms: list[str], text: str) -> list[str]:
    """The query's index `terms` that occur in `text`, in query order, each once."""
    present = set(tokenizer.terms(text))
    return list(dict.fromkeys(t for t in terms if t in present))
