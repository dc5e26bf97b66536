"""Where a query's terms occur in a text: character spans for highlighting matched words.

Each word of the text is analysed as the index analyses it (folding, stemming, identifier
splitting), so "running" is marked for the query "runs" exactly when BM25 matched it.
"""

from __future__ import annotations

import re

from ragloom.text.tokenize import Tokenizer

_WORD = re.compile(r"[^\W_]+")
_IDENTIFIER = re.compile(r"\w+")


def matches(
    tokenizer: Tokenizer, terms: list[str], text: str
) -> tuple[list[str], list[tuple[int, int]]]:
    """(the query's index `terms` that occur in `text`, in query order, each once; the
    (start, end) offsets into `text` of the words whose index terms are among them, as
    `tokenizer` analyses the query)."""
    present = set(tokenizer.terms(text))
    found = list(dict.fromkeys(t for t in terms if t in present))
    wanted = set(terms)
    if not wanted:
        return found, []
    pattern = _IDENTIFIER if tokenizer.config.split_identifiers else _WORD
    spans = [
        m.span() for m in pattern.finditer(text) if wanted.intersection(tokenizer.terms(m.group()))
    ]
    return found, spans
