"""Document ids of files: stable, unique, one per file however it is reached (issue 11.1),
on both stores."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import pytest

from ragloom import Document, Index


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _ids(index: Index, collection: str = "default") -> list[str]:
    return sorted(d.doc_id for d in index.documents(collection))


@pytest.fixture
def two_worlds(tmp_path: Path) -> tuple[Path, Path]:
    bible = _write(tmp_path / "bible" / "world.txt", "The bible's world: floating isles of Vey.")
    other = _write(tmp_path / "other" / "world.txt", "Another world: the salt flats of Orun.")
    _write(tmp_path / "bible" / "characters.txt", "Mira the cartographer of Vey.")
    return bible, other


def test_single_files_of_the_same_name_never_collide(tmp_path: Path, two_worlds, locate) -> None:
    bible, other = two_worlds
    with Index(locate()) as index:
        index.index_path(bible)
        index.index_path(other)
        assert _ids(index) == sorted([str(bible.resolve()), str(other.resolve())])
        assert index.search("floating isles")[0].source == str(bible.resolve())
        assert index.search("salt flats")[0].source == str(other.resolve())


def test_folder_then_file_then_link_is_one_document(tmp_path: Path, two_worlds, locate) -> None:
    bible, _ = two_worlds
    alias = tmp_path / "alias.txt"
    alias.symlink_to(bible)
    with Index(locate()) as index:
        index.index_path(bible.parent)
        assert _ids(index) == ["characters.txt", "world.txt"]
        again = index.index_path(bible)  # the same file, named on its own
        assert (again.documents, again.unchanged) == (0, 1)
        index.index_path(alias)  # ... and through a link
        index.index_path(str(bible.parent) + "/../bible/world.txt")  # ... and another spelling
        assert _ids(index) == ["characters.txt", "world.txt"]
        hits = index.search("floating isles", top_k=5)
        assert [h.document_id for h in hits] == ["world.txt"]


def test_file_then_folder_keeps_the_first_id(tmp_path: Path, two_worlds, locate) -> None:
    bible, _ = two_worlds
    with Index(locate()) as index:
        index.index_path(bible)
        index.index_path(bible.parent)
        assert _ids(index) == sorted(["characters.txt", str(bible.resolve())])


def test_two_folders_sharing_a_name_conflict_loudly(tmp_path: Path, two_worlds, locate) -> None:
    bible, other = two_worlds
    with Index(locate()) as index:
        index.index_path(bible.parent)
        with pytest.warns(UserWarning, match="already belongs to another file"):
            report = index.index_path(other.parent)
        assert [(f.code, f.path) for f in report.failed] == [("id_conflict", str(other))]
        assert index.search("floating isles")[0].document_id == "world.txt"  # not replaced
        with pytest.warns(UserWarning, match="already belongs to"):
            both = index.index_path([bible.parent, other.parent], collection="both")
        assert [f.code for f in both.failed] == ["id_conflict"]
        index.index_path(other.parent, collection="orun")  # its own collection: fine
        assert _ids(index, "orun") == ["world.txt"]


def test_a_moved_folder_replaces_its_old_documents(tmp_path: Path, two_worlds, locate) -> None:
    bible, _ = two_worlds
    with Index(locate()) as index:
        index.index_path(bible.parent)
        moved = tmp_path / "moved"
        bible.parent.rename(moved)
        report = index.index_path(moved)
        assert not report.failed
        assert _ids(index) == ["characters.txt", "world.txt"]
        assert index.search("floating isles")[0].source == str((moved / "world.txt").resolve())


def test_documents_of_older_versions_keep_their_ids(tmp_path: Path, two_worlds, locate) -> None:
    """An index written before: a file's id was its base name and its source the path as
    given, and the same file indexed through two folders became two documents."""
    bible, _ = two_worlds
    given = os.path.relpath(bible)
    with Index(locate()) as index:
        old = [
            Document("world.txt", bible.read_text(), source=given, metadata={"path": "world.txt"}),
            Document(
                "bible/world.txt",
                bible.read_text(),
                source=given,
                metadata={"path": "bible/world.txt"},
            ),
        ]
        index.add(old)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            index.index_path(given)
        assert _ids(index) == ["world.txt"]  # mapped to the old id, the duplicate merged
        assert index.search("floating isles")[0].source == str(bible.resolve())


def test_inline_documents_are_not_touched_by_file_ids(tmp_path: Path, two_worlds, locate) -> None:
    bible, _ = two_worlds
    with Index(locate()) as index:
        index.add([Document("note", "a note citing the world file", source=str(bible))])
        index.index_path(bible)
        assert _ids(index) == sorted(["note", str(bible.resolve())])


def test_a_file_replaced_by_a_link_and_back_never_conflicts(tmp_path: Path, locate) -> None:
    """The name `flip.txt` holds a file, then a link to `in.txt`, then a file again (what a
    path swapped under a running server looks like between two requests): each file keeps its
    own id and text, and the file is never told its id belongs to another file."""
    flip = _write(tmp_path / "d" / "flip.txt", "the flip file speaks of harbours")
    inside = _write(tmp_path / "d" / "in.txt", "the inside file speaks of lanterns")
    with Index(locate()) as index:
        assert not index.index_path(flip).failed
        flip.unlink()
        flip.symlink_to(inside)
        assert not index.index_path(flip).failed  # in.txt, reached through the link
        flip.unlink()
        _write(flip, "the flip file speaks of harbours again")
        assert not index.index_path(flip).failed
        assert _ids(index) == sorted([str(flip.resolve()), str(inside.resolve())])
        by_id = {d.doc_id: d for d in index.documents("default")}
        assert by_id[str(flip.resolve())].source == str(flip.resolve())
        assert by_id[str(inside.resolve())].source == str(inside.resolve())
        assert index.search("lanterns")[0].document_id == str(inside.resolve())
        assert index.search("harbours")[0].document_id == str(flip.resolve())
