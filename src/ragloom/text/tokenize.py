"""Turn text into index terms: Unicode folding, lowercase, word split, stop words, stemming."""

from __future__ import annotations

import re
import threading
import unicodedata
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache
from itertools import chain, filterfalse
from typing import Any

import numpy as np
import Stemmer

from ragloom.errors import InputError
from ragloom.text.code_vocabulary import canonical_terms
from ragloom.text.identifiers import identifier_terms
from ragloom.text.numbering import IdentifierNumbers, TermNumbers, WordNumbers
from ragloom.text.stopwords import stopwords_for

_CACHE_LIMIT = 2_000_000
# Words are runs of letters and digits; underscores and punctuation separate them.
_WORD = re.compile(r"[^\W_]+")
# Identifier mode keeps case and underscores (camelCase and snake_case are split later).
_IDENTIFIER = re.compile(r"\w+")


def _byte_table(keep: str, lower: bool) -> bytes:
    """A bytes.translate table: ASCII letters and digits (and `keep`) stay, lowercased if
    `lower`; other ASCII characters become spaces; bytes of non-ASCII characters (>= 128,
    UTF-8 lead and continuation bytes) pass unchanged."""
    table = bytearray(range(256))
    for code in range(128):
        char = chr(code)
        if char.isalnum() or char in keep:
            table[code] = ord(char.lower()) if lower else code
        else:
            table[code] = 32
    return bytes(table)


_WORD_BYTES = _byte_table("", lower=True)
_IDENTIFIER_BYTES = _byte_table("_", lower=False)


def _split(text: str, table: bytes, pattern: re.Pattern[str]) -> list[str]:
    """`pattern.findall(text)` for text whose ASCII part `table` maps (see `_byte_table`),
    faster: one C pass over the UTF-8 bytes turns ASCII separators into spaces, `split`
    cuts at whitespace, and only pieces holding a non-ASCII separator go through the regex."""
    if text.isascii():
        return text.encode("ascii").translate(table).decode("ascii").split()
    folded = text.encode("utf-8", "surrogatepass").translate(table)
    pieces = folded.decode("utf-8", "surrogatepass").split()
    if all(map(str.isalnum, pieces)):
        return pieces
    words: list[str] = []
    for piece in pieces:
        if piece.isalnum():
            words.append(piece)
        else:
            words.extend(pattern.findall(piece))
    return words


_COMBINING = re.compile(r"[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]+")


@dataclass(frozen=True)
class TokenizerConfig:
    """How a collection's text becomes terms; stored with the collection so queries match."""

    stemmer: str = "english"  # a Snowball algorithm name, or "none"
    stopwords: str = "english"
    fold: bool = True  # strip accents after NFKD so "café" matches "cafe"
    # Code search: index safeFetch / safe_fetch / SAFE_FETCH as safefetch + safe + fetch.
    split_identifiers: bool = False
    # Code search: "string" and `str`, "dictionary" and `dict` are one term (code_vocabulary.py).
    code_vocabulary: bool = False

    def __post_init__(self) -> None:
        """Reject a non-boolean switch (a JSON "false" string would otherwise be true)."""
        for name in ("fold", "split_identifiers", "code_vocabulary"):
            if not isinstance(getattr(self, name), bool):
                raise InputError(f"tokenizer: {name} must be true or false")

    def to_dict(self) -> dict[str, object]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TokenizerConfig:
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})


def strip_accents(text: str) -> str:
    """Decompose (NFKD) and drop combining accents, keeping case."""
    return _COMBINING.sub("", unicodedata.normalize("NFKD", text))


def fold_text(text: str) -> str:
    """Lowercase and, for non-ASCII text, decompose and drop combining accents."""
    if text.isascii():
        return text.lower()
    return _COMBINING.sub("", unicodedata.normalize("NFKD", text)).casefold()


class Tokenizer:
    """Analyzer shared by indexing and querying; caches stems because vocabularies repeat."""

    def __init__(self, config: TokenizerConfig | None = None) -> None:
        self.config = config or TokenizerConfig()
        self._stop = stopwords_for(self.config.stopwords)
        if self.config.stemmer == "none":
            self._stemmer = None
        elif self.config.stemmer in Stemmer.algorithms():
            self._stemmer = Stemmer.Stemmer(self.config.stemmer)
            # our word caches remember every stem; PyStemmer's own cache only costs (its
            # purges made stemming a batch of new words four times slower)
            self._stemmer.maxCacheSize = 0
        else:
            raise InputError(
                f"unknown stemmer {self.config.stemmer!r}",
                "use 'none' or a Snowball algorithm such as 'english' or 'porter'",
            )
        self._canonical: dict[str, str] = {}
        if self.config.code_vocabulary:
            self._canonical = canonical_terms(self._stem)
        self._term_of_word: dict[str, str] = {}
        self.numbers = TermNumbers()  # what the numbers of `numbered` stand for
        # one analyzer serves every thread of the process (`analyzer_for`): numbering adds
        # words and numbers, so one batch at a time
        self._numbering = threading.Lock()
        self._numbers_of_word: WordNumbers | IdentifierNumbers = (
            IdentifierNumbers(self._identifier_numbers)
            if self.config.split_identifiers
            else WordNumbers(self._plain_terms)
        )

    def words(self, text: str) -> list[str]:
        """Folded, lowercased words, stop words included (before stemming).

        With `split_identifiers` the words keep their case and underscores (identifiers).
        """
        if self.config.split_identifiers:
            if not text.isascii() and self.config.fold:
                text = strip_accents(text)
            return _split(text, _IDENTIFIER_BYTES, _IDENTIFIER)
        if text.isascii():
            return _split(text, _WORD_BYTES, _WORD)
        return _split(fold_text(text) if self.config.fold else text.lower(), _WORD_BYTES, _WORD)

    def _learn(self, words: list[str]) -> None:
        """Extend the word -> term cache to cover `words` ("" marks a stop word)."""
        cache = self._term_of_word
        new = set(filterfalse(cache.__contains__, words))
        if len(cache) + len(new) > _CACHE_LIMIT:  # bound memory on endless vocabularies
            cache.clear()
            new = set(words)
        ordered = list(new)
        # stop words marked in the same update: a search in another thread never sees their stem
        cache.update(zip(ordered, self._plain_terms(ordered)))

    def _learn_identifiers(self, words: list[str]) -> None:
        """Extend the identifier -> terms cache: joined form and parts, stemmed, no stop words."""
        cache = self._term_of_word
        new = set(words).difference(cache)
        if len(cache) + len(new) > _CACHE_LIMIT:
            cache.clear()
            new = set(words)
        ordered = list(new)
        expanded = [identifier_terms(w) for w in ordered]
        flat = list(chain.from_iterable(expanded))
        stemmed = iter(self._stem(flat))
        stop = self._stop
        for word, terms in zip(ordered, expanded):
            kept = [t for raw, t in zip(terms, stemmed) if raw not in stop]
            cache[word] = tuple(kept)  # type: ignore[assignment]

    def terms(self, text: str) -> list[str]:
        """Index terms for `text`, in order, duplicates kept (the hot path: C-level loops;
        a word not seen before raises KeyError once, and the cache learns the text's words)."""
        words = self.words(text)
        lookup = self._term_of_word.__getitem__
        if self.config.split_identifiers:
            try:
                return list(chain.from_iterable(map(lookup, words)))  # type: ignore[arg-type]
            except KeyError:
                self._learn_identifiers(words)
                return list(chain.from_iterable(map(lookup, words)))  # type: ignore[arg-type]
        try:
            return list(filter(None, map(lookup, words)))
        except KeyError:
            self._learn(words)
            return list(filter(None, map(lookup, words)))

    def numbered(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray, TermNumbers]:
        """The index terms of many texts as numbers, flat, how many each text has, and the
        numbering that names them: the form of `terms` that indexing uses. One C-level pass
        over each text's words, into one list for all texts; words never seen are analyzed
        together at the end. Safe to call from several threads (one batch at a time)."""
        with self._numbering:
            numbers, counts = self._numbered(texts)
            return numbers, counts, self.numbers

    def _numbered(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        cache = self._numbers_of_word
        if len(self.numbers) > _CACHE_LIMIT:  # an endless vocabulary: start numbering afresh
            self.numbers = TermNumbers()  # (between batches: a batch has one numbering)
            cache.clear()
        elif len(cache) > _CACHE_LIMIT:  # bound memory; numbers stay valid
            cache.clear()
        lookup = cache.__getitem__
        words_of = self.words
        flat: list[int] = []
        extend = flat.extend
        ends = []
        try:
            if self.config.split_identifiers:
                for text in texts:
                    extend(chain.from_iterable(map(lookup, words_of(text))))  # type: ignore[arg-type]
                    ends.append(len(flat))
            else:
                for text in texts:
                    if text.isascii():  # `words`, inlined for the common case
                        words = text.encode("ascii").translate(_WORD_BYTES).decode().split()
                    else:
                        words = words_of(text)
                    extend(map(lookup, words))  # type: ignore[arg-type]
                    ends.append(len(flat))
        except BaseException:
            cache.forget_waiting()
            raise
        counts = np.diff(np.array(ends, np.int64), prepend=0)
        flat_numbers = cache.settle(self.numbers, np.array(flat, np.int64))
        if self.config.split_identifiers:
            return flat_numbers, counts
        keep = flat_numbers != 0  # stop words went through as 0: drop them all at once
        if keep.all():
            return flat_numbers, counts
        text_of = np.repeat(np.arange(len(counts)), counts.astype(np.int64))
        return flat_numbers[keep], np.bincount(text_of[keep], minlength=len(counts))

    def _plain_terms(self, words: list[str]) -> list[str]:
        """The terms of plain words ("" for a stop word), stemmed in one call."""
        stemmed = self._stem(words)
        stop = self._stop
        return ["" if word in stop else term for word, term in zip(words, stemmed)]

    def _identifier_numbers(self, word: str) -> tuple[int, ...]:
        """The numbers of an identifier's terms: joined form and parts, stemmed, no stop words."""
        parts = [p for p in identifier_terms(word) if p not in self._stop]
        return tuple(self.numbers.number(self._stem(parts)))

    def _stem(self, words: Sequence[str]) -> list[str]:
        """The terms of words that are not stop words: stemmed, then (with `code_vocabulary`)
        a word's abbreviation term in its place."""
        stemmed = self._stemmer.stemWords(words) if self._stemmer is not None else list(words)
        if not self._canonical:
            return stemmed
        canonical = self._canonical.get
        return [canonical(term, term) for term in stemmed]


@lru_cache(maxsize=16)
def analyzer_for(config: TokenizerConfig) -> Tokenizer:
    """The process's one analyzer for a setting: indexing and searching share its word ->
    term cache, which is what makes analysis cheap (a new analyzer stems every word again)."""
    return Tokenizer(config)
