"""Structured records: streamed JSONL, per-record collections, bad lines by number."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragloom import DecodeError, Index, JsonlFields, RecordError
from ragloom.errors import UnsupportedFormat
from ragloom.loading import decoded_lines, load_file, read_jsonl_file
from ragloom.loading.files import FoundFile


def write_lines(path: Path, records: list[object]) -> Path:
    lines = [r if isinstance(r, str) else json.dumps(r, ensure_ascii=False) for r in records]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


STORY = [
    {"id": "ch1", "kind": "chapters", "text": "Anna crossed the frozen river at dawn."},
    {"id": "anna", "kind": "characters", "text": "Anna is a ferrywoman with a scar."},
    {"id": "magic", "kind": "world", "text": "Magic fails near running water.", "era": 3},
    {"id": "note", "text": "A loose note without a kind."},
]


def test_records_route_to_their_own_collections(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "story.jsonl", STORY)
    with Index(tmp_path / "i.db") as index:
        report = index.index_path(path, collection="misc", jsonl=JsonlFields(collection="kind"))
        assert report.documents == 4
        assert index.collections() == ["chapters", "characters", "misc", "world"]
        hit = index.search("magic water", top_k=1, collection="world")[0]
        assert (hit.document_id, hit.metadata) == ("magic", {"era": 3})  # kind is not metadata
        assert index.search("loose note", top_k=1, collection="misc")[0].document_id == "note"
        assert index.search("Anna", top_k=5, collection="chapters")[0].document_id == "ch1"


def test_collection_field_is_ordinary_metadata_when_not_mapped(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "story.jsonl", STORY[:1])
    with Index(tmp_path / "i.db") as index:
        index.index_path(path)
        assert index.collections() == ["default"]
        assert index.search("river", top_k=1)[0].metadata == {"kind": "chapters"}


@pytest.mark.parametrize("value", ['""', "3", '["a"]', '"   "', json.dumps("x" * 201)])
def test_bad_collection_value_names_the_line(tmp_path: Path, value: str) -> None:
    path = write_lines(
        tmp_path / "c.jsonl", [STORY[0], f'{{"id": "b", "kind": {value}, "text": "t"}}']
    )
    with Index(tmp_path / "i.db") as index:
        with pytest.raises(RecordError, match="line 2: field 'kind' must be a collection name"):
            index.index_path(path, jsonl=JsonlFields(collection="kind"), fail_fast=True)
        with pytest.warns(UserWarning, match="line 2"):
            report = index.index_path(path, jsonl=JsonlFields(collection="kind"), lenient=True)
        assert report.documents == 1


def test_jsonl_documents_stream_lazily(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_lines(tmp_path / "big.jsonl", [{"id": str(i), "text": f"r {i}"} for i in range(5)])
    with path.open("a", encoding="utf-8") as handle:
        handle.write("{broken\n")

    def whole_file(self: Path) -> bytes:
        raise AssertionError("a JSONL file must not be read whole")

    monkeypatch.setattr(Path, "read_bytes", whole_file)
    loaded = load_file(FoundFile(path, tmp_path))
    assert isinstance(loaded.documents, Iterator)
    docs = iter(loaded.documents)
    assert [next(docs).id for _ in range(5)] == ["0", "1", "2", "3", "4"]  # before the bad line
    with pytest.raises(RecordError, match="line 6: not valid JSON"):
        next(docs)


def test_large_file_indexes_line_by_line(tmp_path: Path) -> None:
    path = tmp_path / "large.jsonl"
    with path.open("w", encoding="utf-8") as handle:
        for i in range(3_000):
            handle.write(json.dumps({"id": f"r{i}", "text": f"record number {i} word{i % 97}"}))
            handle.write("\n")
    with Index(tmp_path / "i.db") as index:
        report = index.index_path(path)
        assert report.documents == 3_000
        assert index.search("word42", top_k=500)[0].document_id.startswith("r")
        assert len(index.search("word42", top_k=500)) == len(range(42, 3_000, 97))


def test_invalid_utf8_names_file_line_and_byte_offset(tmp_path: Path) -> None:
    good = (json.dumps({"id": "a", "text": "café"}) + "\n").encode()
    bad = b'{"id": "b", "text": "bro\xffken"}\n'
    path = tmp_path / "bad.jsonl"
    path.write_bytes(good + good.replace(b'"a"', b'"c"') + bad)
    with pytest.raises(DecodeError) as info:
        list(read_jsonl_file(path))
    offset = 2 * len(good) + bad.index(b"\xff")
    assert info.value.offset == offset
    assert f"bad.jsonl: invalid UTF-8 at byte {offset}" in str(info.value)
    assert "line 3" in str(info.value)
    docs = list(read_jsonl_file(path, lenient=True))
    assert [d.id for d in docs] == ["a", "c", "b"] and "\ufffd" in docs[2].text


def test_bom_crlf_and_line_separators_inside_strings(tmp_path: Path) -> None:
    path = tmp_path / "odd.jsonl"
    record = json.dumps({"id": "x", "text": "one\u2028two\u0085three"}, ensure_ascii=False)
    path.write_bytes(b"\xef\xbb\xbf" + record.encode() + b"\r\n\r\n" + b'{"id": "y", "text": "z"}')
    docs = list(read_jsonl_file(path))
    assert [d.id for d in docs] == ["x", "y"]
    assert docs[0].text == "one\u2028two\u0085three"
    assert list(decoded_lines(path))[1] == "\r\n"


def test_bad_lines_are_reported_by_number_and_skipped_when_lenient(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "mixed.jsonl",
        [{"id": "1", "text": "first"}, "[1, 2]", "", {"id": "4"}, {"id": "5", "text": "fifth"}],
    )
    with pytest.raises(RecordError, match="line 2: expected a JSON object"):
        list(read_jsonl_file(path))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        docs = list(read_jsonl_file(path, lenient=True))
    assert [d.id for d in docs] == ["1", "5"]
    assert [str(w.message).split(": ", 1)[0] for w in caught] == [
        f"skipped {path}, line 2",
        f"skipped {path}, line 4",
    ]


def test_binary_jsonl_is_named_not_read(tmp_path: Path) -> None:
    path = tmp_path / "blob.jsonl"
    path.write_bytes(b'{"id": "a"}\x00\x00')
    with pytest.raises(UnsupportedFormat, match="blob.jsonl: not a supported format"):
        load_file(FoundFile(path, tmp_path))


# --- the coding agent's records: renamed fields, code records chunked as code ---------------

SWIFT = (
    "import SwiftUI\n\n"
    "struct ThrottleView: View {\n"
    '    var body: some View { Text("rate limited") }\n'
    "}\n\n"
    "func throttle(requests: Int, per seconds: Double) -> Bool {\n"
    "    return requests > Int(seconds * 10)\n"
    "}\n"
)
KNOWLEDGE = [
    {
        "id": "throttle-swift",
        "title": "Throttling requests",
        "text": SWIFT,
        "language": "swift",
        "ios_version": "17.0",
        "framework": "SwiftUI",
    },
    {
        "id": "throttle-doc",
        "title": "About throttling",
        "text": "Throttling limits how often a request may run. " * 3,
        "language": "en",
        "ios_version": "16.0",
    },
]


def test_mapped_fields_can_be_renamed(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "kb.jsonl", KNOWLEDGE)
    fields = JsonlFields(rename={"ios_version": "ios_version_min"})
    docs = list(read_jsonl_file(path, fields))
    assert docs[0].metadata == {
        "language": "swift",
        "ios_version_min": "17.0",
        "framework": "SwiftUI",
    }
    chosen = JsonlFields(metadata=("ios_version",), rename={"ios_version": "ios_version_min"})
    assert [d.metadata for d in read_jsonl_file(path, chosen)] == [
        {"ios_version_min": "17.0"},
        {"ios_version_min": "16.0"},
    ]
    with Index(tmp_path / "i.db") as index:
        index.index_path(path, jsonl=fields)
        hits = index.search("throttling", filters={"ios_version_min": {"$version_gte": "17"}})
        assert {h.document_id for h in hits} == {"throttle-swift"}


def test_renaming_two_fields_onto_one_key_names_the_line(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "kb.jsonl", KNOWLEDGE[:1])
    fields = JsonlFields(rename={"ios_version": "framework"})
    with pytest.raises(RecordError, match="line 1: .*'ios_version'.*'framework'"):
        list(read_jsonl_file(path, fields))


def test_a_record_in_a_code_language_is_chunked_as_code(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "kb.jsonl", KNOWLEDGE)
    with Index(tmp_path / "i.db") as index:
        index.index_path(path)
        hits = index.search("throttle requests per seconds", top_k=10)
        code = [h for h in hits if h.document_id == "throttle-swift"]
        assert code and all(h.metadata["kind"] in ("function", "struct", "module") for h in code)
        assert {h.metadata.get("symbol") for h in code} >= {"throttle"}
        assert all(h.metadata["language"] == "swift" for h in code)
        prose = [h for h in hits if h.document_id == "throttle-doc"]
        assert prose and all("kind" not in h.metadata for h in prose)  # "en" is not code


def test_the_language_field_can_be_mapped(tmp_path: Path) -> None:
    records = [{"id": "p", "text": "def greet(name):\n    return name\n", "lang": "Python"}]
    path = write_lines(tmp_path / "kb.jsonl", records)
    (doc,) = read_jsonl_file(path, JsonlFields(language="lang"))
    assert doc.language == "python"
    (plain,) = read_jsonl_file(path, JsonlFields(language=None))
    assert plain.language is None
