"""A folder's re-index mirrors the folder (issue 46, item 0): the documents of files gone
from it, or now left out by the walk's rules, are removed; documents from elsewhere never;
and a folder that is missing, cannot be listed or is suddenly empty removes nothing. The
walk's rules: scratch files never indexed, `.gitignore` respected unless asked. Both stores."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from ragloom import Document, Index
from ragloom.cli import cli
from ragloom.errors import PathNotFound
from tests.server_launch import ServerProcess


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _ids(index: Index) -> list[str]:
    return sorted(d.doc_id for d in index.documents(limit=1000))


def _found(index: Index, word: str) -> list[str]:
    return sorted({h.document_id for h in index.search(word, top_k=20, mode="lexical")})


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    _write(folder / "dragons.md", "# Dragons\n\nThe wyrmqueen sleeps under the glacier.")
    _write(folder / "places.txt", "Karsh is a fortress city carved into basalt.")
    _write(folder / "deep" / "river.txt", "The river Olun floods every spring.")
    return folder


def test_a_deleted_file_leaves_the_index_on_the_next_run(notes: Path, locate) -> None:
    with Index(locate()) as index:
        first = index.index_path(notes)
        assert (first.documents, first.removed) == (3, 0)
        (notes / "places.txt").unlink()
        shutil.rmtree(notes / "deep")
        again = index.index_path(notes)
        assert (again.documents, again.unchanged, again.removed) == (0, 1, 2)
        assert again.held == []
        assert _ids(index) == ["dragons.md"]
        assert _found(index, "basalt") == [] and _found(index, "Olun") == []
        assert index.stats()["documents"] == 1


def test_keep_missing_keeps_them(notes: Path, locate) -> None:
    with Index(locate()) as index:
        index.index_path(notes)
        (notes / "places.txt").unlink()
        kept = index.index_path(notes, keep_missing=True)
        assert kept.removed == 0
        assert _found(index, "basalt") == ["places.txt"]


def test_documents_from_elsewhere_are_never_touched(tmp_path: Path, notes: Path, locate) -> None:
    other = _write(tmp_path / "other" / "far.txt", "The far isles of Vey drift north.")
    hidden = _write(notes / ".secret.md", "The hidden passphrase is swordfish.")
    records = _write(notes / "lore.jsonl", json.dumps({"id": "rec-1", "text": "Aelwen rides"}))
    with Index(locate()) as index:
        index.add([Document("inline", "An inline note about griffins.")])
        index.index_path(other.parent)
        index.index_path(hidden)  # a file named on its own: its real path is its id
        index.index_path(notes)
        before = _ids(index)
        assert "rec-1" in before and str(hidden.resolve()) in before
        records.unlink()
        (notes / "places.txt").unlink()
        again = index.index_path(notes)
        assert again.removed == 1
        assert _ids(index) == sorted(set(before) - {"places.txt"})


def test_files_the_rules_now_leave_out_are_removed(notes: Path, locate) -> None:
    with Index(locate()) as index:
        index.index_path(notes)
        narrower = index.index_path(notes, exclude=["deep/*"])
        assert narrower.removed == 1
        assert _ids(index) == ["dragons.md", "places.txt"]
        only_md = index.index_path(notes, include=["*.md"])
        assert only_md.removed == 1
        assert _ids(index) == ["dragons.md"]


def test_a_missing_folder_fails_and_removes_nothing(tmp_path: Path, notes: Path) -> None:
    with Index(tmp_path / "i.db") as index:
        index.index_path(notes)
        moved = notes.rename(tmp_path / "elsewhere")
        with pytest.raises(PathNotFound):
            index.index_path(notes)
        assert len(_ids(index)) == 3
        moved.rename(notes)


def test_a_suddenly_empty_folder_removes_nothing_and_says_why(
    tmp_path: Path, notes: Path, locate
) -> None:
    with Index(locate()) as index:
        index.index_path(notes)
        shutil.rmtree(notes)
        notes.mkdir()  # an unmounted drive leaves its empty mount point
        report = index.index_path(notes)
        assert report.removed == 0
        assert len(report.held) == 1 and "is empty" in report.held[0]
        assert "nothing removed" in report.held[0]
        assert len(_ids(index)) == 3


def test_a_folder_that_cannot_be_listed_removes_nothing(
    tmp_path: Path, notes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Permissions cannot be taken from root (the tests' user in CI), so the OS's refusal is
    played by the listing call itself: once for the folder, once for a subfolder."""
    with Index(tmp_path / "i.db") as index:
        index.index_path(notes)
        (notes / "places.txt").unlink()
        (notes / "deep" / "river.txt").unlink()
        real_listdir, real_scandir = os.listdir, os.scandir

        def refuse(path: os.PathLike | str = ".") -> list[str]:
            if Path(path).resolve() == notes.resolve():
                raise PermissionError(13, "Permission denied", str(path))
            return real_listdir(path)

        monkeypatch.setattr(os, "listdir", refuse)
        report = index.index_path(notes)
        assert report.removed == 0 and "cannot be listed" in report.held[0]
        monkeypatch.setattr(os, "listdir", real_listdir)

        _write(notes / "deep" / "river.txt", "The river Olun floods every spring.")
        index.index_path(notes)

        def refuse_deep(path: os.PathLike | str = "."):
            if Path(path).resolve() == (notes / "deep").resolve():
                raise PermissionError(13, "Permission denied", str(path))
            return real_scandir(path)

        monkeypatch.setattr(os, "scandir", refuse_deep)
        monkeypatch.setattr(os, "access", lambda p, mode: Path(p).name != "deep")
        report = index.index_path(notes)
        assert any("cannot be listed" in reason for _, reason in report.skipped)
        assert "deep/river.txt" in _ids(index)  # its folder could not be listed: kept


def test_scratch_files_are_never_indexed(notes: Path, locate) -> None:
    for name in (
        ".dragons.md.swp",
        "dragons.md~",
        "dragons.md.swp",
        "draft.tmp",
        "#dragons.md#",
        ".DS_Store",
        "big.txt.part",
        "video.txt.crdownload",
        "notes.txt.bak",
        "~$minutes.txt",
        "4913",
    ):
        _write(notes / name, "scratchword in a scratch file")
    with Index(locate()) as index:
        report = index.index_path(notes, include=["*"])
        assert _found(index, "scratchword") == []
        assert sorted(_ids(index)) == ["deep/river.txt", "dragons.md", "places.txt"]
        assert report.skipped == []


def test_gitignore_is_respected_unless_asked(tmp_path: Path, notes: Path, locate) -> None:
    (tmp_path / ".git").mkdir()  # the notes live in a git work tree whose top ignores drafts
    _write(tmp_path / ".gitignore", "drafts/\n")
    _write(notes / ".gitignore", "*.log.txt\n!keep.log.txt\n")
    _write(notes / "deep" / ".gitignore", "river.txt\n")
    _write(notes / "build.log.txt", "logword noise")
    _write(notes / "keep.log.txt", "keptword signal")
    _write(notes / "drafts" / "idea.md", "draftword half an idea")
    with Index(locate()) as index:
        index.index_path(notes)
        assert _ids(index) == ["dragons.md", "keep.log.txt", "places.txt"]
        every = index.index_path(notes, include_ignored=True)
        assert every.documents == 3
        assert _found(index, "draftword") == ["drafts/idea.md"]
        assert _found(index, "Olun") == ["deep/river.txt"]
        back = index.index_path(notes)  # ignored again: their documents leave
        assert back.removed == 3
        assert _ids(index) == ["dragons.md", "keep.log.txt", "places.txt"]


def test_the_command_says_how_many_were_removed(tmp_path: Path, notes: Path) -> None:
    db = str(tmp_path / "cli.db")
    runner = CliRunner()
    assert runner.invoke(cli, ["--index", db, "index", str(notes)]).exit_code == 0
    (notes / "places.txt").unlink()
    kept = runner.invoke(cli, ["--index", db, "index", str(notes), "--keep-missing", "--json"])
    assert json.loads(kept.output)["removed"] == 0
    result = runner.invoke(cli, ["--index", db, "index", str(notes)])
    assert result.exit_code == 0, result.output
    assert "1 removed" in result.output
    shutil.rmtree(notes)
    notes.mkdir()
    empty = runner.invoke(cli, ["--index", db, "index", str(notes), "--json"])
    answer = json.loads(empty.stdout)
    assert answer["removed"] == 0 and "is empty" in answer["held"][0]


def test_post_index_of_a_root_mirrors_it(tmp_path: Path, notes: Path) -> None:
    env = {"RAGLOOM_EMBEDDER": "none"}
    with (
        ServerProcess(tmp_path / "s.db", roots=[notes], env=env) as srv,
        httpx.Client(base_url=srv.url, timeout=60) as http,
    ):
        assert http.post("/index", json={"path": str(notes)}).json()["documents"] == 3
        (notes / "places.txt").unlink()
        kept = http.post("/index", json={"path": str(notes), "keep_missing": True}).json()
        assert kept["removed"] == 0
        answer = http.post("/index", json={"path": str(notes)}).json()
        assert answer["ok"] and answer["removed"] == 1 and answer["held"] == []
        hits = http.post("/query", json={"query": "basalt", "mode": "lexical"}).json()
        assert hits["results"] == []


def test_a_folder_named_though_git_ignores_it_is_indexed(tmp_path: Path, locate) -> None:
    (tmp_path / ".git").mkdir()
    _write(tmp_path / ".gitignore", "notes/\n*.log.md\n")
    _write(tmp_path / "notes" / "keep.md", "keptword")
    _write(tmp_path / "notes" / "deep" / ".gitignore", "*.tmp.md\n")
    _write(tmp_path / "notes" / "deep" / "x.tmp.md", "tmpword")
    with Index(locate()) as index:
        index.index_path(tmp_path / "notes")  # asked for by name: the rules above do not apply
        assert _ids(index) == ["keep.md"]
