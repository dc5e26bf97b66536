"""Probes: pseudo-queries cut from a collection's own chunks, to learn without judged
questions how well each leg finds things in this collection.

A probe takes one sentence-like part of a chunk (its docstring, its title, its first
sentence, or its first words) as the query and the rest of the chunk as what must be found
(the inverse cloze task). Each leg ranks the rest of the chunk among the collection's
chunks: the lexical leg by BM25 with the collection's statistics, the dense leg by the
cosine of the rest's own vector. The legs' mean reciprocal ranks over the probes tell
adaptive fusion how far to trust each (`ragloom.retrieval.adaptive`).

Pure functions; `ragloom.engine.calibration` runs them against a store.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ragloom.lexical import BM25Params, bm25_weights

MIN_QUERY_WORDS = 3
MIN_REST_WORDS = 10
MAX_PREFIX_WORDS = 12  # a probe cut from prose with no sentences: its first words
_DOCSTRING = re.compile(r'("""|\'\'\')(.*?)\1', re.S)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


@dataclass(frozen=True)
class Probe:
    """A pseudo-query cut from one chunk, and the chunk's rest that it should find."""

    row: int
    query: str
    rest: str


def _squash(text: str) -> str:
    return " ".join(text.split())


def cut_probe(title: str | None, text: str) -> tuple[str, str] | None:
    """(query, rest) cut from a chunk, or None when it is too short to probe with.

    Code with a docstring: its first paragraph, the code without it. A titled chunk: its
    title, its text (without a leading copy of the title). Prose of three sentences or
    more: the first sentence. Else the first words (up to 12, a third of the text)."""
    found = _DOCSTRING.search(text)
    if found and len(found.group(2).split()) >= MIN_QUERY_WORDS:
        query = _squash(found.group(2).strip().split("\n\n")[0])
        return _checked(query, text[: found.start()] + text[found.end() :])
    body = _squash(text)
    if title and len(title.split()) >= MIN_QUERY_WORDS:
        head = _squash(title)
        if body.lower().startswith(head.lower()):
            body = body[len(head) :]
        return _checked(head, body)
    sentences = [s for s in _SENTENCE_END.split(body) if s.strip()]
    if len(sentences) >= 3:
        return _checked(sentences[0], " ".join(sentences[1:]))
    words = body.split()
    cut = min(MAX_PREFIX_WORDS, len(words) // 3)
    return _checked(" ".join(words[:cut]), " ".join(words[cut:]))


def _checked(query: str, rest: str) -> tuple[str, str] | None:
    query, rest = _squash(query), _squash(rest)
    if len(query.split()) < MIN_QUERY_WORDS or len(rest.split()) < MIN_REST_WORDS:
        return None
    return query, rest


def probe_order(keys: Mapping[int, str]) -> list[int]:
    """Rows in a fixed pseudo-random order: by a hash of each row's stable key (its chunk
    id), so that every store and every run probes the same chunks."""
    return sorted(keys, key=lambda row: hashlib.sha256(keys[row].encode("utf-8")).digest())


def rest_bm25(
    query_terms: Sequence[str],
    rest_terms: Sequence[str],
    document_frequencies: Mapping[str, int],
    chunks: int,
    average_length: float,
    params: BM25Params,
) -> float:
    """The BM25 score the rest of a chunk would have, with the collection's statistics."""
    from ragloom.lexical import bm25_idf

    counts = Counter(rest_terms)
    length = np.array([float(len(rest_terms))])
    total = 0.0
    for term in query_terms:
        tf = counts.get(term, 0)
        if tf and document_frequencies.get(term, 0) > 0:
            idf = bm25_idf(document_frequencies[term], chunks)
            weight = bm25_weights(np.array([float(tf)]), length, idf, average_length, params)
            total += float(weight[0])
    return total


def reciprocal_rank(target: float, row: int, rows: np.ndarray, scores: np.ndarray) -> float:
    """1 / the rank `target` would take among the other rows' scores (ties in its favour);
    0 for a target with no score at all."""
    if target <= 0.0:
        return 0.0
    others = scores[rows != row]
    ahead = int(np.count_nonzero(others > target))
    return 1.0 / (ahead + 1)


def mean_reciprocal_ranks(lexical: Sequence[float], dense: Sequence[float]) -> dict[str, float]:
    """The profile's figures: each leg's mean reciprocal rank over the probes."""
    return {
        "lexical_mrr": round(float(np.mean(lexical)) if len(lexical) else 0.0, 4),
        "dense_mrr": round(float(np.mean(dense)) if len(dense) else 0.0, 4),
    }
