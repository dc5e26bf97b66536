"""The analyzer as it was before it was made faster (ragloom.text.tokenize at main d59dd20),
kept verbatim as the reference the fast one must equal word for word. Not used by ragloom."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import asdict, dataclass
from itertools import chain

import Stemmer

from ragloom.errors import InputError
from ragloom.text.identifiers import identifier_terms
from ragloom.text.stopwords import stopwords_for

_CACHE_LIMIT = 2_000_000
# Words are runs of letters and digits; underscores and punctuation separate them.
_WORD = re.compile(r"[^\W_]+")
# The same split for ASCII text, faster: map every non-alphanumeric character to a space.
_ASCII_SEPARATORS = str.maketrans({chr(c): " " for c in range(128) if not chr(c).isalnum()})
# Identifier mode keeps case and underscores (camelCase and snake_case are split later).
_IDENTIFIER = re.compile(r"\w+")
_ASCII_IDENTIFIER_SEPARATORS = str.maketrans(
    {chr(c): " " for c in range(128) if not (chr(c).isalnum() or chr(c) == "_")}
)
_COMBINING = re.compile(r"[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]+")


@dataclass(frozen=True)
class TokenizerConfig:
    """How a collection's text becomes terms; stored with the collection so queries match."""

    stemmer: str = "english"  # a Snowball algorithm name, or "none"
    stopwords: str = "english"
    fold: bool = True  # strip accents after NFKD so "café" matches "cafe"
    # Code search: index safeFetch / safe_fetch / SAFE_FETCH as safefetch + safe + fetch.
    split_identifiers: bool = False

    def __post_init__(self) -> None:
        """Reject a non-boolean switch (a JSON "false" string would otherwise be true)."""
        for name in ("fold", "split_identifiers"):
            if not isinstance(getattr(self, name), bool):
                raise InputError(f"tokenizer: {name} must be true or false")

    def to_dict(self) -> dict[str, object]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> TokenizerConfig:
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
        else:
            raise InputError(
                f"unknown stemmer {self.config.stemmer!r}",
                "use 'none' or a Snowball algorithm such as 'english' or 'porter'",
            )
        self._term_of_word: dict[str, str] = {}

    def words(self, text: str) -> list[str]:
        """Folded, lowercased words, stop words included (before stemming).

        With `split_identifiers` the words keep their case and underscores (identifiers).
        """
        if self.config.split_identifiers:
            if text.isascii():
                return text.translate(_ASCII_IDENTIFIER_SEPARATORS).split()
            return _IDENTIFIER.findall(strip_accents(text) if self.config.fold else text)
        if text.isascii():
            return text.lower().translate(_ASCII_SEPARATORS).split()
        folded = fold_text(text) if self.config.fold else text.lower()
        return _WORD.findall(folded)

    def _learn(self, words: list[str]) -> None:
        """Extend the word -> term cache to cover `words` ("" marks a stop word)."""
        cache = self._term_of_word
        new = set(words).difference(cache)
        if len(cache) + len(new) > _CACHE_LIMIT:  # bound memory on endless vocabularies
            cache.clear()
            new = set(words)
        ordered = list(new)
        stemmed = self._stemmer.stemWords(ordered) if self._stemmer is not None else ordered
        stop = self._stop
        cache.update((w, "" if w in stop else t) for w, t in zip(ordered, stemmed))

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
        stemmed = iter(self._stemmer.stemWords(flat) if self._stemmer is not None else flat)
        stop = self._stop
        for word, terms in zip(ordered, expanded):
            kept = [t for raw, t in zip(terms, stemmed) if raw not in stop]
            cache[word] = tuple(kept)  # type: ignore[assignment]

    def terms(self, text: str) -> list[str]:
        """Index terms for `text`, in order, duplicates kept (the hot path: C-level loops)."""
        if self.config.split_identifiers:
            words = self.words(text)
            cached = list(map(self._term_of_word.get, words))
            if None in cached:
                self._learn_identifiers(words)
                cached = list(map(self._term_of_word.__getitem__, words))
            return list(chain.from_iterable(cached))  # type: ignore[arg-type]
        words = self.words(text)
        terms = list(map(self._term_of_word.get, words))
        if None in terms:
            self._learn(words)
            terms = list(map(self._term_of_word.__getitem__, words))
        return list(filter(None, terms))
