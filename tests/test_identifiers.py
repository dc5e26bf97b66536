"""Identifier-aware lexical tokens: camelCase, snake_case and dotted paths match plain words."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragloom import Document, Index, InputError
from ragloom.text import Tokenizer, TokenizerConfig
from ragloom.text.identifiers import identifier_parts, identifier_terms

SPLIT = TokenizerConfig(split_identifiers=True)


@pytest.mark.parametrize(
    ("word", "parts"),
    [
        ("safeFetch", ["safe", "fetch"]),
        ("safe_fetch", ["safe", "fetch"]),
        ("SafeFetch", ["safe", "fetch"]),
        ("SAFE_FETCH", ["safe", "fetch"]),
        ("XMLHttpRequest", ["xml", "http", "request"]),
        ("getHTTP2Response", ["get", "http2", "response"]),
        ("base64Encode", ["base64", "encode"]),
        ("remove_nans_1D", ["remove", "nans", "1d"]),
        ("md5sum", ["md5sum"]),
        ("__init__", ["init"]),
        ("x", ["x"]),
        ("_", []),
        ("größeBerechnen", ["grösse", "berechnen"]),
        ("ÄrgerBären_SUMME", ["ärger", "bären", "summe"]),
        ("変数名", ["変数名"]),
    ],
)
def test_identifier_parts(word: str, parts: list[str]) -> None:
    assert identifier_parts(word) == parts


def test_identifier_terms_keep_the_joined_form_first() -> None:
    assert identifier_terms("safeFetch") == ["safefetch", "safe", "fetch"]
    assert identifier_terms("fetch") == ["fetch"]


def test_all_spellings_of_an_identifier_give_the_same_terms() -> None:
    tok = Tokenizer(SPLIT)
    spellings = ["safeFetch", "safe_fetch", "SafeFetch", "SAFE_FETCH"]
    assert {tuple(tok.terms(s)) for s in spellings} == {("safefetch", "safe", "fetch")}
    assert set(tok.terms("safe fetch")) <= set(tok.terms("safeFetch"))


def test_dotted_paths_and_calls_split() -> None:
    tok = Tokenizer(SPLIT)
    assert tok.terms("os.path.join(root, name)") == ["os", "path", "join", "root", "name"]
    assert tok.terms("self.itemCount += 1") == ["self", "itemcount", "item", "count", "1"]


def test_parts_are_stemmed_and_stop_words_dropped() -> None:
    tok = Tokenizer(SPLIT)
    assert tok.terms("isRunning") == ["isrun", "run"]  # "is" is a stop word
    assert tok.terms("The parsedRecords") == ["parsedrecord", "pars", "record"]


def test_accents_fold_in_identifiers() -> None:
    tok = Tokenizer(SPLIT)
    assert tok.terms("größeBerechnen") == tok.terms("grosse_berechnen")
    assert tok.terms("café_crème") == ["cafecrem", "cafe", "creme"]


def test_cache_returns_the_same_terms_on_repeated_words() -> None:
    tok = Tokenizer(SPLIT)
    first = tok.terms("parseJsonLine parseJsonLine parse_json_line")
    assert first == tok.terms("parseJsonLine parseJsonLine parse_json_line")
    assert first[:4] == ["parsejsonlin", "pars", "json", "line"]
    assert len(first) == 12


def test_prose_tokenizer_is_unchanged_by_default() -> None:
    tok = Tokenizer()
    assert tok.config.split_identifiers is False
    assert tok.terms("safeFetch safe_fetch os.path") == ["safefetch", "safe", "fetch", "os", "path"]


def test_config_switch_is_validated_and_round_trips() -> None:
    with pytest.raises(InputError, match="split_identifiers"):
        TokenizerConfig(split_identifiers="yes")  # type: ignore[arg-type]
    assert TokenizerConfig.from_dict(SPLIT.to_dict()) == SPLIT
    assert TokenizerConfig.from_dict({"stemmer": "english"}).split_identifiers is False


DOCS = [
    Document("snake", "def safe_fetch(url):\n    return http.get(url)"),
    Document("camel", "function safeFetch(url) { return fetch(url); }"),
    Document("prose", "It is safe to fetch water from the well, the fetch is long."),
    Document("other", "def load_config(path):\n    return json.load(open(path))"),
]


@pytest.fixture
def code_index(tmp_path: Path):
    with Index(tmp_path / "code.db") as index:
        index.configure("code", tokenizer={"split_identifiers": True})
        index.add(DOCS, "code")
        yield index


@pytest.mark.parametrize("query", ["safeFetch", "safe_fetch", "SafeFetch", "SAFE_FETCH"])
def test_any_spelling_finds_both_identifiers_before_prose(code_index: Index, query: str) -> None:
    hits = code_index.search(query, top_k=4, collection="code")
    assert {h.document_id for h in hits[:2]} == {"snake", "camel"}
    assert hits[2].document_id == "prose"


def test_plain_words_match_identifier_parts(code_index: Index) -> None:
    hits = code_index.search("safe fetch", top_k=4, collection="code")
    assert {h.document_id for h in hits} == {"snake", "camel", "prose"}
    config_hits = code_index.search("config loading", top_k=1, collection="code")
    assert config_hits[0].document_id == "other"


def test_tokenizer_setting_is_stored_with_the_collection(code_index: Index) -> None:
    path = code_index.path
    with Index(path) as reopened:
        assert reopened.stats()["collections"]["code"]["config"]["tokenizer"]["split_identifiers"]
        assert reopened.search("loadConfig", top_k=1, collection="code")[0].document_id == "other"
