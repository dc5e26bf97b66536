"""The code vocabulary (tokenizer `code_vocabulary`): a word and the abbreviation code spells
it with are one term; off by default, stored per collection (older collections keep theirs)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ragloom import Document, Index, InputError
from ragloom.text import Tokenizer, TokenizerConfig

TEXT = "Python: convert a String to_string into dictionaries with getDirectoryNames"
CONFIGS = [
    TokenizerConfig(code_vocabulary=True),
    TokenizerConfig(code_vocabulary=True, split_identifiers=True),
    TokenizerConfig(code_vocabulary=True, split_identifiers=True, stemmer="none"),
    TokenizerConfig(code_vocabulary=True, stopwords="none", fold=False),
]


def test_off_by_default_and_off_is_the_plain_analyzer() -> None:
    assert TokenizerConfig().code_vocabulary is False
    assert TokenizerConfig.from_dict({"split_identifiers": True}).code_vocabulary is False
    assert Tokenizer().terms(TEXT) == [
        "python", "convert", "string", "string", "dictionari", "getdirectorynam",
    ]  # fmt: skip


def test_words_meet_their_abbreviations() -> None:
    plain = Tokenizer(TokenizerConfig(code_vocabulary=True))
    assert plain.terms(TEXT) == ["python", "convert", "str", "str", "dict", "getdirectorynam"]
    split = Tokenizer(TokenizerConfig(code_vocabulary=True, split_identifiers=True))
    assert split.terms(TEXT) == [
        "python", "convert", "str", "tostr", "str", "dict",
        "getdirectorynam", "get", "dir", "name",
    ]  # fmt: skip
    # without a stemmer the listed plural forms map too
    unstemmed = Tokenizer(TokenizerConfig(code_vocabulary=True, stemmer="none"))
    assert unstemmed.terms("directories integers py") == ["dir", "int", "py"]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: repr(c.to_dict()))
def test_indexing_numbers_name_the_same_terms_as_search(config: TokenizerConfig) -> None:
    texts = [TEXT, "def read_json_file(path): return json.load(open(path))", "", "Py py PYTHON"]
    numbers, counts, names = Tokenizer(config).numbered(texts)
    flat = names.names(numbers.tolist())
    expected = [Tokenizer(config).terms(t) for t in texts]
    assert counts.tolist() == [len(t) for t in expected]
    assert flat == [term for terms in expected for term in terms]


def test_a_non_boolean_switch_is_refused() -> None:
    with pytest.raises(InputError, match="code_vocabulary"):
        TokenizerConfig(code_vocabulary="yes")  # type: ignore[arg-type]


DOCS = [
    Document("tostr", "def to_str(value):\n    return str(value)"),
    Document("words", 'def shout(words):\n    """Upper case words, as in a string."""'),
    Document("dirs", "def make_dir(path):\n    os.makedirs(path, exist_ok=True)"),
]


def test_a_collection_keeps_its_setting_and_an_older_one_keeps_plain_terms(locate) -> None:
    """On both stores: the terms are made in Python, so PostgreSQL stores the same ones."""
    with Index(locate("code")) as index:
        index.configure("code", tokenizer={"split_identifiers": True, "code_vocabulary": True})
        index.add(DOCS, "code")
        index.configure("older", tokenizer={"split_identifiers": True})
        index.add(DOCS, "older")
    with Index(locate("code")) as index:
        stats = index.stats()["collections"]
        assert stats["code"]["config"]["tokenizer"]["code_vocabulary"] is True
        assert stats["older"]["config"]["tokenizer"]["code_vocabulary"] is False

        def ids(query: str, collection: str) -> list[str]:
            hits = index.search(query, mode="lexical", collection=collection)
            return [h.document_id for h in hits]

        # with the vocabulary "string" is `str`: either spelling finds both functions
        assert ids("string", "code") == ids("str", "code") == ["tostr", "words"]
        # the older collection ranks as before: "string" is its own term there
        assert ids("string", "older") == ["words"]
        assert ids("str", "older") == ["tostr"]
        assert ids("create directory", "code") == ["dirs"]
        assert ids("create directory", "older") == []
        with pytest.raises(InputError, match="tokenizer cannot change"):
            index.configure("older", tokenizer={"code_vocabulary": True})


def test_the_index_command_sets_it_for_a_new_collection(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "convert.py").write_text("def to_str(value):\n    return str(value)\n")
    db = tmp_path / "cli.db"

    def ragloom(*args: str) -> subprocess.CompletedProcess:
        command = [sys.executable, "-m", "ragloom", "--index", str(db), *args]
        return subprocess.run(command, capture_output=True, text=True, timeout=120)

    made = ragloom("index", str(src), "--collection", "code", "--code-vocabulary")
    assert made.returncode == 0, made.stderr
    with Index(db) as index:
        tokenizer = index.stats()["collections"]["code"]["config"]["tokenizer"]
        assert tokenizer["code_vocabulary"] is True and tokenizer["split_identifiers"] is False
    found = ragloom("search", "string", "--collection", "code", "--mode", "lexical", "--json")
    assert found.returncode == 0, found.stderr
    assert "convert.py" in found.stdout
