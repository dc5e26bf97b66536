"""Where a query's terms occur in a hit's text (`ragloom.text.highlight.matches`): the words
analysed as the index analyses them, so a highlight marks exactly what BM25 matched."""

from __future__ import annotations

from ragloom import Document, Index
from ragloom.text.highlight import matches
from ragloom.text.tokenize import Tokenizer, TokenizerConfig


def _marked(text: str, spans: list[tuple[int, int]]) -> list[str]:
    return [text[start:end] for start, end in spans]


def test_stemmed_words_are_marked_and_the_terms_listed_in_query_order_once() -> None:
    tokenizer = Tokenizer()
    text = "Runners were running; the runner runs. Nothing else ran."
    terms = tokenizer.terms("runs the nothing runs zebra")
    found, spans = matches(tokenizer, terms, text)
    assert found == [t for t in dict.fromkeys(terms) if t != "zebra"]
    assert _marked(text, spans) == ["running", "runs", "Nothing"]


def test_identifiers_are_split_when_the_collection_splits_them() -> None:
    text = "call parseConfigFile(path) then load_config"
    split = Tokenizer(TokenizerConfig(split_identifiers=True))
    found, spans = matches(split, split.terms("config"), text)
    assert found == split.terms("config")
    assert _marked(text, spans) == ["parseConfigFile", "load_config"]
    whole = Tokenizer()
    assert _marked(text, matches(whole, whole.terms("config"), text)[1]) == ["config"]


def test_no_terms_mark_nothing() -> None:
    assert matches(Tokenizer(), [], "any text at all") == ([], [])


def test_an_explained_hit_carries_its_matches(tmp_path) -> None:
    with Index(tmp_path / "h.db", embedder=None) as index:
        index.add([Document("a", "The lighthouse keeper lit the lamps at dusk.")])
        hit = index.search("lamp keepers", explain=True)[0]
    assert hit.explain["matched_terms"] == Tokenizer().terms("lamp keepers")
    marked = [hit.text[start:end] for start, end in hit.explain["highlights"]]
    assert marked == ["keeper", "lamps"]
