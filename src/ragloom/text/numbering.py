"""Numbers for index terms, so a batch of chunks travels as one integer array.

Ingest turns every word into a term number (the analyzer remembers word -> number) and hands
the store flat arrays instead of a list of strings per chunk; the store maps numbers to its
own term ids with one array lookup. Numbers are process-local and never reused: 0 stands for
no term (a stop word), 1.. for terms in the order they were first seen.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from itertools import chain
from typing import Any

import numpy as np


class TermNumbers:
    """term <-> number for one analyzer (or one batch of given term lists); append-only."""

    def __init__(self) -> None:
        self.terms: list[str] = [""]  # number -> term; 0 is no term
        self._number: dict[str, int] = {"": 0}

    def __len__(self) -> int:
        return len(self.terms)

    def number(self, terms: Iterable[str]) -> list[int]:
        """The number of each term, giving new terms the next free numbers."""
        terms = list(terms)
        known = self._number
        new = [t for t in dict.fromkeys(terms) if t not in known]
        if new:
            known.update(zip(new, range(len(self.terms), len(self.terms) + len(new))))
            self.terms.extend(new)
        return list(map(known.__getitem__, terms))

    def names(self, numbers: Sequence[int]) -> list[str]:
        terms = self.terms
        return [terms[n] for n in numbers]


class ChunkTerms:
    """The index terms of many chunks, flat: every chunk's term numbers (repeats kept) one
    chunk after another, how many each chunk has, and what the numbers stand for."""

    __slots__ = ("lengths", "names", "numbers")

    def __init__(self, numbers: np.ndarray, lengths: np.ndarray, names: TermNumbers) -> None:
        self.numbers = np.asarray(numbers, np.int64)
        self.lengths = np.asarray(lengths, np.int64)
        self.names = names
        if int(self.lengths.sum()) != len(self.numbers):
            raise ValueError("chunk term lengths do not add up to the numbers given")

    @classmethod
    def from_lists(cls, term_lists: Sequence[Sequence[str]]) -> ChunkTerms:
        """Per-chunk lists of term strings, numbered afresh (exports, tests, other callers)."""
        names = TermNumbers()
        numbers = names.number(chain.from_iterable(term_lists))
        return cls(np.array(numbers, np.int64), np.fromiter(map(len, term_lists), np.int64), names)

    @classmethod
    def for_chunks(cls, terms: ChunkTerms | None, chunks: Sequence[Any]) -> ChunkTerms:
        """The terms a store write was given for `chunks` (checked to cover each one), or
        those of each chunk's own `terms` list."""
        if terms is None:
            return cls.from_lists([c.terms for c in chunks])
        if len(terms) != len(chunks):
            raise ValueError(f"terms for {len(terms)} chunks given with {len(chunks)} chunks")
        return terms

    def __len__(self) -> int:
        return len(self.lengths)

    def lists(self) -> list[list[str]]:
        """Each chunk's terms as strings (for stores that keep strings)."""
        terms = self.names.terms
        bounds = np.concatenate(([0], np.cumsum(self.lengths))).tolist()
        flat = [terms[n] for n in self.numbers.tolist()]
        return [flat[lo:hi] for lo, hi in zip(bounds[:-1], bounds[1:])]


class WordNumbers(dict):
    """word -> term number (0: a stop word) for the plain analyzer. A word missing at lookup
    (a C-level dict miss) gets a placeholder, -k, and waits; `settle` analyzes every waiting
    word in one call and puts the real numbers (0 for new stop words) in place."""

    def __init__(self, analyze: Callable[[list[str]], list[str]]) -> None:
        super().__init__()
        self._analyze = analyze  # words -> their terms ("" for a stop word)
        self._waiting: list[str] = []

    def __missing__(self, word: str) -> int:
        self._waiting.append(word)
        value = self[word] = -len(self._waiting)
        return value

    def forget_waiting(self) -> None:
        """Drop placeholders (a batch that failed half way must not leave them behind)."""
        for word in self._waiting:
            self.pop(word, None)
        self._waiting = []

    def settle(self, names: TermNumbers, flat: np.ndarray) -> np.ndarray:
        """Numbers for the waiting words, put in place of their placeholders in `flat`."""
        if not self._waiting:
            return flat
        words, self._waiting = self._waiting, []
        found = np.array(names.number(self._analyze(words)), np.int64)
        self.update(zip(words, found.tolist()))
        waiting = flat < 0
        flat[waiting] = found[-flat[waiting] - 1]
        return flat


class IdentifierNumbers(dict):
    """word -> its identifier terms' numbers (a tuple), analyzed when first looked up."""

    def __init__(self, learn: Callable[[str], tuple[int, ...]]) -> None:
        super().__init__()
        self._learn = learn

    def __missing__(self, word: str) -> tuple[int, ...]:
        value = self[word] = self._learn(word)
        return value

    def forget_waiting(self) -> None:
        """Nothing waits: every word is analyzed when first looked up."""

    def settle(self, names: TermNumbers, flat: np.ndarray) -> np.ndarray:
        return flat
