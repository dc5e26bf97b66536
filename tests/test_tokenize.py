import pytest

from ragloom.errors import InputError
from ragloom.text import Tokenizer, TokenizerConfig
from ragloom.text.tokenize import fold_text


def test_folding_lowercases_and_strips_accents():
    assert fold_text("Café NAÏVE Ångström") == "cafe naive angstrom"


def test_terms_stem_and_drop_stop_words():
    terms = Tokenizer().terms("The runners were running to the studies of Cafés")
    assert terms == ["runner", "were", "run", "studi", "cafe"]


def test_underscores_and_punctuation_split_words():
    assert Tokenizer().terms("safe_fetch(url); x.y-z") == ["safe", "fetch", "url", "x", "y", "z"]


def test_no_stemming_and_no_stop_words_when_configured():
    tok = Tokenizer(TokenizerConfig(stemmer="none", stopwords="none"))
    assert tok.terms("The Running dogs") == ["the", "running", "dogs"]


def test_punctuation_only_gives_no_terms():
    assert Tokenizer().terms(' AND OR NOT * " - + ( ) ') == []


def test_non_latin_scripts_are_kept():
    assert Tokenizer().terms("Привет мир") != []


def test_unknown_stemmer_is_an_error():
    with pytest.raises(InputError, match="unknown stemmer"):
        Tokenizer(TokenizerConfig(stemmer="klingon"))


def test_unknown_stopword_list_is_an_error():
    with pytest.raises(InputError, match="unknown stop-word list"):
        Tokenizer(TokenizerConfig(stopwords="klingon"))
