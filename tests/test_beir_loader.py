"""BEIR loader: small folders built per test (including every error) and the shared collections."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragloom.errors import DecodeError, InputError, PathNotFound, RecordError
from ragloom.evaluation import evaluate_run, load_beir
from ragloom.types import Document

from .conftest import shared_dataset

CORPUS = [
    {"_id": "007", "title": "Bond", "text": "licence to index", "year": 1962},
    {"_id": "12", "title": "", "text": "no title here"},
    {"_id": "d3", "text": ""},
]
QUERIES = [
    {"_id": "1", "text": "who is bond"},
    {"_id": "01", "text": "titles"},
    {"_id": "unjudged", "text": "not in any qrels"},
]
QRELS = "query-id\tcorpus-id\tscore\n1\t007\t2\n1\t12\t0\n01\t12\t1\n"


def _jsonl(records: list[dict]) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def _write(
    root: Path,
    corpus: str | bytes | None = None,
    queries: str | bytes | None = None,
    qrels: dict[str, str | bytes] | None = None,
) -> Path:
    """Write a BEIR folder; arguments left as None get the small valid defaults above."""
    files: dict[str, str | bytes] = {
        "corpus.jsonl": _jsonl(CORPUS) if corpus is None else corpus,
        "queries.jsonl": _jsonl(QUERIES) if queries is None else queries,
    }
    for split, text in ({"test": QRELS} if qrels is None else qrels).items():
        files[f"qrels/{split}.tsv"] = text
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8", newline="")
    return root


# --- a valid folder ---------------------------------------------------------------------------


def test_loads_queries_qrels_and_streams_documents(tmp_path: Path) -> None:
    ds = load_beir(_write(tmp_path / "mini"))
    assert ds.name == "mini"
    assert ds.corpus_path == tmp_path / "mini" / "corpus.jsonl"
    # only judged queries are kept; ids stay strings, "01" is not "1"
    assert ds.queries == {"1": "who is bond", "01": "titles"}
    assert ds.qrels == {"1": {"007": 2, "12": 0}, "01": {"12": 1}}

    docs = list(ds.iter_corpus())
    source = str(tmp_path / "mini" / "corpus.jsonl")
    assert docs == [
        Document("007", "licence to index", "Bond", source, {"year": 1962}),
        Document("12", "no title here", None, source, {}),
        Document("d3", "", None, source, {}),
    ]


def test_iter_corpus_is_lazy_and_repeatable(tmp_path: Path) -> None:
    ds = load_beir(_write(tmp_path))
    stream = ds.iter_corpus()
    assert next(stream).id == "007"
    assert [d.id for d in ds.iter_corpus()] == ["007", "12", "d3"]


def test_other_split_integer_ids_crlf_bom_and_blank_lines(tmp_path: Path) -> None:
    corpus = '\ufeff{"_id": 5, "text": "int id"}\r\n\r\n{"_id": "6", "text": "six"}\r\n'
    qrels = {"test": QRELS, "dev": "query-id\tcorpus-id\tscore\r\n1\t5\t1.0\r\n\r\n01\t6\t3\r\n"}
    ds = load_beir(_write(tmp_path, corpus=corpus, qrels=qrels), split="dev")
    assert ds.qrels == {"1": {"5": 1}, "01": {"6": 3}}
    assert [(d.id, d.text) for d in ds.iter_corpus()] == [("5", "int id"), ("6", "six")]


def test_qrels_header_is_optional(tmp_path: Path) -> None:
    ds = load_beir(_write(tmp_path, qrels={"test": "1\t007\t1\n"}))
    assert ds.qrels == {"1": {"007": 1}}


# --- errors -----------------------------------------------------------------------------------


def test_missing_folder(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    with pytest.raises(PathNotFound, match="nope") as info:
        load_beir(missing)
    hint = info.value.hint  # what the folder holds, and how to make one
    for part in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv", "docs/evaluation.md"):
        assert part in hint


@pytest.mark.parametrize("command", ["eval", "tune"])
def test_eval_and_tune_on_a_missing_folder_say_what_a_beir_folder_holds(
    tmp_path: Path, command: str
) -> None:
    import subprocess
    import sys

    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "ragloom",
            "--index",
            str(tmp_path / "i.db"),
            command,
            str(tmp_path / "scifact"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 1 and "Traceback" not in run.stderr
    assert "BEIR folder not found" in run.stderr
    assert "hint: a BEIR folder holds corpus.jsonl" in run.stderr
    assert "qrels/test.tsv" in run.stderr and "your own" in run.stderr


def test_folder_is_a_file(tmp_path: Path) -> None:
    path = tmp_path / "corpus.jsonl"
    path.write_text("{}\n")
    with pytest.raises(InputError, match="not a folder"):
        load_beir(path)


@pytest.mark.parametrize("name", ["corpus.jsonl", "queries.jsonl"])
def test_missing_file(tmp_path: Path, name: str) -> None:
    root = _write(tmp_path)
    (root / name).unlink()
    with pytest.raises(PathNotFound, match=name) as info:
        load_beir(root)
    assert str(root / name) in str(info.value)


def test_missing_split_lists_available_splits(tmp_path: Path) -> None:
    root = _write(tmp_path, qrels={"test": QRELS, "dev": QRELS})
    with pytest.raises(PathNotFound) as info:
        load_beir(root, split="train")
    message = str(info.value)
    assert str(root / "qrels" / "train.tsv") in message
    assert "available splits: dev, test" in message


def test_missing_qrels_folder(tmp_path: Path) -> None:
    root = _write(tmp_path, qrels={})
    with pytest.raises(PathNotFound, match="available splits: none"):
        load_beir(root)


def test_malformed_json_in_corpus_is_reported_while_streaming(tmp_path: Path) -> None:
    corpus = _jsonl(CORPUS[:1]) + '{"_id": "x", "text": \n'
    ds = load_beir(_write(tmp_path, corpus=corpus))
    stream = ds.iter_corpus()
    assert next(stream).id == "007"
    with pytest.raises(RecordError, match="invalid JSON") as info:
        next(stream)
    assert info.value.line == 2
    assert info.value.path == str(tmp_path / "corpus.jsonl")


def test_malformed_first_corpus_line_fails_at_load(tmp_path: Path) -> None:
    with pytest.raises(RecordError) as info:
        load_beir(_write(tmp_path, corpus="not json\n"))
    assert info.value.line == 1


@pytest.mark.parametrize(
    ("record", "reason"),
    [
        ({"title": "t", "text": "no id"}, 'missing "_id"'),
        ({"_id": "", "text": "empty id"}, '"_id" is empty'),
        ({"_id": ["x"], "text": "list id"}, '"_id" must be a string'),
        ({"_id": "x"}, 'missing "text"'),
        ({"_id": "x", "text": 3}, '"text" must be a string'),
        ({"_id": "x", "text": "t", "title": 3}, '"title" must be'),
        ({"_id": "007", "text": "again"}, "duplicate _id"),
    ],
)
def test_bad_corpus_record(tmp_path: Path, record: dict, reason: str) -> None:
    corpus = _jsonl(CORPUS[:1]) + "\n" + _jsonl([record])  # blank line 2: the bad record is line 3
    ds = load_beir(_write(tmp_path, corpus=corpus))
    with pytest.raises(RecordError, match=reason) as info:
        list(ds.iter_corpus())
    assert info.value.line == 3


def test_corpus_line_that_is_not_an_object(tmp_path: Path) -> None:
    ds = load_beir(_write(tmp_path, corpus=_jsonl(CORPUS[:1]) + "[1, 2]\n"))
    with pytest.raises(RecordError, match="JSON object") as info:
        list(ds.iter_corpus())
    assert info.value.line == 2


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ('{"_id": "1", "text": \n', "invalid JSON"),
        ('{"text": "no id"}\n', 'missing "_id"'),
        ('{"_id": "2"}\n', 'missing "text"'),
        ('{"_id": "1", "text": "dup"}\n', "duplicate _id"),
    ],
)
def test_bad_query_record(tmp_path: Path, line: str, reason: str) -> None:
    queries = _jsonl(QUERIES[:1]) + line
    with pytest.raises(RecordError, match=reason) as info:
        load_beir(_write(tmp_path, queries=queries))
    assert info.value.line == 2
    assert info.value.path == str(tmp_path / "queries.jsonl")


@pytest.mark.parametrize(
    ("row", "reason"),
    [
        ("1\t007\n", "3 tab-separated fields"),
        ("1 007 1\n", "3 tab-separated fields"),
        ("1\t007\t1\textra\n", "3 tab-separated fields"),
        ("1\t007\tyes\n", "score must be an integer"),
        ("1\t007\t0.5\n", "score must be an integer"),
        ("\t007\t1\n", "empty query-id"),
        ("1\t007\t1\n", "duplicate judgment"),
    ],
)
def test_bad_qrels_row(tmp_path: Path, row: str, reason: str) -> None:
    qrels = "query-id\tcorpus-id\tscore\n1\t007\t1\n\n" + row  # the bad row is line 4
    with pytest.raises(RecordError, match=reason) as info:
        load_beir(_write(tmp_path, qrels={"test": qrels}))
    assert info.value.line == 4
    assert info.value.path == str(tmp_path / "qrels" / "test.tsv")


def test_qrels_without_rows(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no judgments"):
        load_beir(_write(tmp_path, qrels={"test": "query-id\tcorpus-id\tscore\n"}))


def test_judged_query_missing_from_queries(tmp_path: Path) -> None:
    qrels = QRELS + "ghost\t007\t1\n"
    with pytest.raises(InputError, match="'ghost'"):
        load_beir(_write(tmp_path, qrels={"test": qrels}))


@pytest.mark.parametrize(
    ("name", "bad_line", "bad_at"),
    [
        ("corpus.jsonl", b'{"_id": "\xff\xfe", "text": ""}\n', len(b'{"_id": "')),
        ("queries.jsonl", b'{"_id": "\xff\xfe", "text": ""}\n', len(b'{"_id": "')),
        ("qrels/test.tsv", b"1\t\xff\t1\n", len(b"1\t")),
    ],
)
def test_invalid_utf8_names_the_file(
    tmp_path: Path, name: str, bad_line: bytes, bad_at: int
) -> None:
    valid = {
        "corpus.jsonl": _jsonl(CORPUS),
        "queries.jsonl": _jsonl(QUERIES),
        "qrels/test.tsv": QRELS,
    }[name].encode()
    line_2 = valid.index(b"\n") + 1
    broken = valid[:line_2] + bad_line + valid[line_2:]
    root = tmp_path / "ds"
    _write(
        root,
        corpus=broken if name == "corpus.jsonl" else None,
        queries=broken if name == "queries.jsonl" else None,
        qrels={"test": broken} if name == "qrels/test.tsv" else None,
    )
    with pytest.raises(DecodeError) as info:
        ds = load_beir(root)
        list(ds.iter_corpus())  # the corpus is read past its first line only while streaming
    assert isinstance(info.value, InputError)
    assert info.value.path == str(root / name)
    assert info.value.offset == line_2 + bad_at
    message = str(info.value)
    assert str(root / name) in message
    assert "invalid UTF-8" in message
    assert "line 2" in message


def test_invalid_utf8_late_in_corpus_fails_while_streaming(tmp_path: Path) -> None:
    corpus = _jsonl(CORPUS).encode() + b'{"_id": "z", "text": "caf\xe9"}\n'
    ds = load_beir(_write(tmp_path, corpus=corpus))
    with pytest.raises(DecodeError, match="line 4"):
        list(ds.iter_corpus())


@pytest.mark.parametrize("corpus", ["", "\n\n  \n"])
def test_empty_corpus(tmp_path: Path, corpus: str) -> None:
    with pytest.raises(InputError, match="corpus is empty"):
        load_beir(_write(tmp_path, corpus=corpus))


# --- the shared collections ---------------------------------------------------------------------


def _collection(name: str) -> Path:
    return shared_dataset(name)


# Fast (< 0.5 s for both), so not marked slow: they run with the default test selection.
@pytest.mark.parametrize(
    ("name", "docs", "queries", "rows", "grades", "empty_texts"),
    [
        ("scifact", 5183, 300, 339, {1}, 0),
        ("cranfield", 1400, 225, 1837, {0, 1, 2, 3, 4}, 2),
    ],
)
def test_shared_collection_counts(
    name: str, docs: int, queries: int, rows: int, grades: set[int], empty_texts: int
) -> None:
    ds = load_beir(_collection(name))
    assert ds.name == name
    assert len(ds.queries) == queries
    assert set(ds.queries) == set(ds.qrels)
    assert sum(len(j) for j in ds.qrels.values()) == rows
    assert {g for j in ds.qrels.values() for g in j.values()} == grades
    corpus = list(ds.iter_corpus())
    assert len(corpus) == docs
    assert len({d.id for d in corpus}) == docs
    assert sum(not d.text for d in corpus) == empty_texts
    assert all(isinstance(d.id, str) and d.source == str(ds.corpus_path) for d in corpus)
    # every judged document exists in the corpus
    ids = {d.id for d in corpus}
    assert all(doc in ids for j in ds.qrels.values() for doc in j)
    # a run that ranks the judged documents by grade is perfect
    run = {q: sorted(j, key=lambda d, j=j: -j[d]) for q, j in ds.qrels.items()}
    assert evaluate_run(run, ds.qrels) == {
        "ndcg@10": pytest.approx(1.0),
        "recall@100": pytest.approx(1.0),
        "mrr@10": pytest.approx(1.0),
        "queries": queries,
    }
