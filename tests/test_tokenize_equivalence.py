"""The fast analyzer gives exactly the terms the previous one gave: on random text of every
kind (ASCII, accents, other scripts, punctuation, underscores, control characters), in every
configuration, and on every document of the shared collections."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragloom.evaluation.beir import load_beir
from ragloom.text import Tokenizer, TokenizerConfig

from . import reference_tokenize as reference
from .conftest import shared_dataset

CONFIGS = [
    TokenizerConfig(),
    TokenizerConfig(fold=False),
    TokenizerConfig(split_identifiers=True),
    TokenizerConfig(split_identifiers=True, fold=False),
    TokenizerConfig(stemmer="none", stopwords="none"),
    TokenizerConfig(stemmer="porter", split_identifiers=True),
]

ascii_text = st.text(alphabet=st.characters(max_codepoint=127), max_size=300)
mixed_text = st.text(
    alphabet=st.one_of(
        st.characters(max_codepoint=127),
        st.sampled_from("éÉçßøÅñ–—…’“”·×βΔπ中文日本語한국어аБв\u0301\u0308\u00a0\u2009\u200b"),
        st.characters(),
    ),
    max_size=300,
)
words_text = st.lists(
    st.sampled_from(
        [
            "The",
            "running",
            "safeFetch",
            "XMLHttpRequest",
            "snake_case",
            "HTTP2",
            "café",
            "Ångström",
            "naïve",
            "studies",
            "of",
            "a",
            "__init__",
            "x",
            "1D",
            "base64",
            "ß",
        ]
    ),
    max_size=40,
).map(" ".join)


def pair(config: TokenizerConfig) -> tuple[Tokenizer, reference.Tokenizer]:
    ref_config = reference.TokenizerConfig.from_dict(config.to_dict())  # no code_vocabulary
    return Tokenizer(config), reference.Tokenizer(ref_config)


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: repr(c.to_dict()))
@settings(max_examples=100, deadline=None)
@given(texts=st.lists(st.one_of(ascii_text, mixed_text, words_text), min_size=1, max_size=4))
def test_same_words_and_terms_as_before(config: TokenizerConfig, texts: list[str]):
    fast, old = pair(config)
    for text in texts * 2:  # twice: the second pass is served by the word cache
        assert fast.words(text) == old.words(text)
        assert fast.terms(text) == old.terms(text)


@pytest.mark.parametrize("name", ["scifact", "cranfield"])
@pytest.mark.parametrize("split", [False, True])
def test_same_terms_on_the_shared_collections(name: str, split: bool):
    config = TokenizerConfig(split_identifiers=split)
    fast, old = pair(config)
    for doc in load_beir(shared_dataset(name)).iter_corpus():
        text = f"{doc.title or ''} {doc.text}"
        assert fast.terms(text) == old.terms(text), doc.id
