"""Loading files and folders: discovery, ids, binaries, encodings, JSONL records."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from ragloom import DecodeError, Index, JsonlFields, PathNotFound, RecordError
from ragloom.errors import UnsupportedFormat
from ragloom.loading import discover_files, load_file
from ragloom.loading.files import FoundFile


def write(path: Path, content: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "notes"
    write(root / "a.txt", "Alpha notes about the northern lighthouse and its keeper.")
    write(root / "sub" / "b.md", "# Bells\n\nThe drowned bell rings for the dead of Greyhaven.")
    write(root / "sub" / "deep" / "c.txt", "Charlie: the salt road runs along the coast.")
    write(root / "image.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    write(root / ".hidden" / "secret.txt", "hidden folder contents")
    write(root / "empty.txt", "")
    write(root / "data.csv", "a,b\n1,2\n")
    return root


def taken(found: list[FoundFile]) -> list[FoundFile]:
    return [f for f in found if not f.left_out]


def test_directory_ids_are_relative_posix_paths(tree: Path):
    found = discover_files([tree])
    ids = sorted(f.path.relative_to(f.root).as_posix() for f in taken(found))
    assert ids == ["a.txt", "data.csv", "empty.txt", "sub/b.md", "sub/deep/c.txt"]
    # Nothing the walk meets is dropped unseen: what it does not take, a rule left out.
    left = sorted((f.path.name, f.left_out) for f in found if f.left_out)
    assert left == [(".hidden", "hidden folder"), ("image.png", "image (left out by default)")]


def test_include_and_exclude_globs(tree: Path):
    only_md = discover_files([tree], include=["*.md"])
    assert [f.path.name for f in taken(only_md)] == ["b.md"]
    assert {f.left_out for f in only_md if f.left_out} >= {"not matched by --include"}
    no_deep = discover_files([tree], exclude=["sub/deep/*"])
    assert "c.txt" not in {f.path.name for f in taken(no_deep)}
    assert ("c.txt", "matched by --exclude") in {(f.path.name, f.left_out) for f in no_deep}
    with_png = discover_files([tree], include=["*.png"])
    assert [f.path.name for f in taken(with_png)] == ["image.png"]


def test_missing_path_is_a_clear_error(tmp_path: Path):
    with pytest.raises(PathNotFound, match="no such file or folder"):
        discover_files([tmp_path / "nope"])


def test_binary_content_of_no_known_format_is_named(tree: Path):
    with pytest.raises(UnsupportedFormat, match="image.png: not a supported format"):
        load_file(FoundFile(tree / "image.png", tree))


def test_invalid_utf8_names_file_and_byte_offset(tmp_path: Path):
    bad = write(tmp_path / "bad.txt", "caf\u00e9 ok\n".encode() + b"broken \xff byte")
    with pytest.raises(DecodeError) as info:
        load_file(FoundFile(bad, tmp_path))
    assert info.value.offset == len("caf\u00e9 ok\n".encode()) + len(b"broken ")
    assert "bad.txt" in str(info.value) and "byte 16" in str(info.value)
    lenient = load_file(FoundFile(bad, tmp_path), lenient=True)
    assert "\ufffd" in lenient.documents[0].text
    # Each caller reads the fix in its own words: a keyword here, a flag on the command line,
    # a request field over HTTP.
    assert "lenient=True" in info.value.hint and "--lenient" not in info.value.hint
    assert "--lenient" in info.value.hint_for("cli")
    assert '"lenient": true' in info.value.hint_for("http")


def test_bom_is_dropped_and_markdown_title_found(tmp_path: Path):
    md = write(tmp_path / "t.md", b"\xef\xbb\xbf# The Title\n\nBody text here.")
    doc = load_file(FoundFile(md, tmp_path)).documents[0]
    assert doc.title == "The Title" and doc.text.startswith("# The Title")


def test_empty_file_indexes_as_nothing(tree: Path, tmp_path: Path):
    with Index(tmp_path / "i.db") as index, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = index.index_path(tree)
        assert report.files == 5 and report.documents == 4  # the CSV's one row is a record
        assert [r for _, r in report.skipped] == [] and len(report.left_out) == 2
        assert not caught
        assert {d.doc_id for d in index.documents()} == {
            "a.txt",
            "sub/b.md",
            "sub/deep/c.txt",
            "data.csv:2",
        }


def test_index_path_names_binary_content_it_cannot_read(tree: Path, tmp_path: Path):
    with Index(tmp_path / "i.db") as index, pytest.warns(UserWarning, match="image.png"):
        report = index.index_path(tree, include=["*.png", "*.txt"])
    assert [(Path(f.path).name, f.code) for f in report.failed] == [
        ("image.png", "unsupported_format")
    ]


def test_invalid_utf8_in_a_tree_fails_that_file_only(tmp_path: Path):
    root = tmp_path / "docs"
    write(root / "good.txt", "The good file is about copper lanterns.")
    with Index(tmp_path / "i.db") as index:
        index.index_path(root)
        write(root / "a_bad.txt", b"fine line\nbad \xc3\x28 sequence")
        write(root / "later.txt", "A later file about pewter bells.")
        with pytest.warns(UserWarning, match="a_bad.txt"):
            report = index.index_path(root)
        assert [(f.path, f.code, f.offset, f.line) for f in report.failed] == [
            (str(root / "a_bad.txt"), "invalid_utf8", 14, 2)
        ]
        assert index.search("pewter bells")[0].document_id == "later.txt"
        assert index.search("copper lanterns")[0].document_id == "good.txt"
        with pytest.raises(DecodeError, match="a_bad.txt"):
            index.index_path(root, fail_fast=True)


def test_markdown_chunks_carry_heading_paths(tmp_path: Path):
    text = "# Guide\n\nIntro words about the guide.\n\n## Install\n\nRun the installer twice.\n"
    write(tmp_path / "g.md", text)
    with Index(tmp_path / "i.db") as index:
        index.index_path(tmp_path)
        hit = index.search("installer", top_k=1)[0]
    assert hit.metadata["headings"] == ["Guide", "Install"]
    assert hit.document_id == "g.md" and hit.title == "Guide"


JSONL = (
    '{"id": "r1", "title": "Romans 9", "text": "Commentary on election and mercy.",'
    ' "scholar": "a"}\n'
    "\n"
    '{"id": 2, "text": "A note on grace without a title."}\n'
)


def test_jsonl_records_become_documents(tmp_path: Path):
    write(tmp_path / "c.jsonl", JSONL)
    with Index(tmp_path / "i.db") as index:
        report = index.index_path(tmp_path / "c.jsonl")
        assert report.documents == 2
        hit = index.search("election mercy", top_k=1)[0]
    assert (hit.document_id, hit.title, hit.metadata["scholar"]) == ("r1", "Romans 9", "a")


def test_jsonl_field_mapping(tmp_path: Path):
    write(
        tmp_path / "m.jsonl", '{"key": "k1", "heading": "H", "body": "Copper and tin.", "x": 1}\n'
    )
    fields = JsonlFields(id="key", title="heading", text="body", metadata=("x",))
    with Index(tmp_path / "i.db") as index:
        index.index_path(tmp_path / "m.jsonl", jsonl=fields)
        hit = index.search("copper", top_k=1)[0]
    assert (hit.document_id, hit.title, hit.metadata) == ("k1", "H", {"x": 1})


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "expected a JSON object"),
        ('{"id": "x"}', "'text' is missing"),
        ('{"id": "x", "text": 5}', "'text' is missing or not a string"),
        ('{"id": null, "text": "t"}', "'id' must be"),
        ('{"id": "x", "text": "t", "title": 3}', "'title' must be a string"),
    ],
)
def test_malformed_jsonl_line_reports_its_number(tmp_path: Path, line: str, reason: str):
    write(tmp_path / "bad.jsonl", JSONL + line + "\n")
    with Index(tmp_path / "i.db") as index:
        with pytest.raises(RecordError, match=f"line 4: .*{reason}") as info:
            index.index_path(tmp_path / "bad.jsonl", fail_fast=True)
        assert info.value.line == 4
        assert info.value.offset == len(JSONL.encode())
        assert index.stats()["documents"] == 0  # nothing of the bad batch was written
        with pytest.warns(UserWarning, match="line 4"):
            report = index.index_path(tmp_path / "bad.jsonl")  # reported: the rest goes on
        assert [(f.code, f.line) for f in report.failed] == [("bad_record", 4)]


def test_lenient_jsonl_skips_bad_lines(tmp_path: Path):
    write(tmp_path / "bad.jsonl", JSONL + "{oops\n")
    with Index(tmp_path / "i.db") as index, pytest.warns(UserWarning, match="line 4"):
        report = index.index_path(tmp_path / "bad.jsonl", lenient=True)
    assert report.documents == 2


def test_jsonl_records_without_id_get_line_based_ids(tmp_path: Path):
    write(tmp_path / "n.jsonl", '{"text": "first record"}\n{"text": "second record"}\n')
    with Index(tmp_path / "i.db") as index:
        index.index_path(tmp_path)
        assert {d.doc_id for d in index.documents()} == {"n.jsonl:1", "n.jsonl:2"}


def test_a_folder_is_not_read_as_a_file(tmp_path: Path):
    folder = write(tmp_path / "looks_like.txt" / "inner.txt", "x").parent  # a folder, not a file
    assert load_file(FoundFile(folder, tmp_path)).skipped == "not a regular file (folder)"


def test_symlinks_leading_outside_the_folder_are_skipped(tmp_path: Path):
    root = tmp_path / "root"
    write(root / "inside.txt", "inside text about harbours")
    secret = write(tmp_path / "secret.txt", "outside secret about harbours")
    (root / "link.txt").symlink_to(secret)
    (root / "alias.txt").symlink_to(root / "inside.txt")  # stays inside: fine
    with Index(tmp_path / "i.db") as index, pytest.warns(UserWarning, match="outside"):
        report = index.index_path(root)
        assert [(Path(p).name, r) for p, r in report.skipped] == [
            ("alias.txt", f"the same file as {root / 'inside.txt'}"),
            ("link.txt", "symlink to outside the folder"),
        ]
        assert {d.doc_id for d in index.documents()} == {"inside.txt"}  # one file, one document
