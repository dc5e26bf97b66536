"""Hostile files through the library and the CLI: every good file indexed, every bad one
named with its reason and position, nothing outside the folder ever read."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import pytest

from ragloom import Index
from ragloom.errors import FileChanged, FileRefused, FileTooLarge, PathNotFound, RecordError
from ragloom.loading import ReadPolicy, discover_files, load_file
from ragloom.loading.jsonl import MAX_DEPTH, read_jsonl, too_deep
from ragloom.loading.opening import OpenFile
from tests.hostile import Expect, build


def run_cli(*args: str, index: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "RAGLOOM_EMBEDDER": "none"}
    cmd = [sys.executable, "-m", "ragloom.cli", "--index", str(index), *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)


@pytest.fixture
def corpus(tmp_path: Path) -> tuple[Path, list[Expect]]:
    folder = tmp_path / "corpus"
    return folder, build(folder, tmp_path / "outside")


def _index(index: Index, path: Path, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return index.index_path(path, **kwargs)


def test_hostile_corpus_every_outcome_as_expected(tmp_path: Path, corpus) -> None:
    folder, expected = corpus
    with Index(tmp_path / "i.db") as index:
        start = time.monotonic()
        report = _index(index, folder, include=["*"])
        assert time.monotonic() - start < 30  # nothing blocks (the FIFO is never opened)
        skipped = {Path(p).relative_to(folder).as_posix(): r for p, r in report.skipped}
        failed = {
            os.fsencode(f.path).decode("utf-8", "backslashreplace").removeprefix(f"{folder}/"): f
            for f in report.failed
        }
        for expect in expected:
            if expect.outcome == "skipped":
                assert skipped.get(expect.name) == expect.detail, expect
            elif expect.outcome == "failed":
                failure = failed[expect.name]
                assert failure.code == expect.detail, failure
                assert (failure.offset, failure.line) == (expect.offset, expect.line), failure
                assert expect.name in failure.reason
            else:
                assert expect.name not in skipped and expect.name not in failed, expect
                if expect.detail:
                    hits = index.search(expect.detail, top_k=1)
                    assert hits and hits[0].document_id == expect.name, expect
        assert not index.search("swordfish")
        assert sum(e.outcome == "failed" for e in expected) == len(report.failed)


def test_lenient_keeps_good_records_and_repairs_text(tmp_path: Path, corpus) -> None:
    folder, _ = corpus
    with Index(tmp_path / "i.db") as index:
        report = _index(index, folder, include=["*"], lenient=True)
        # lenient repairs text; binary content is not text, and stays named
        assert [Path(f.path).name for f in report.failed] == ["nul_early.txt"]
        ids = {d.doc_id for d in index.documents()}
        assert {"r1", "r2", "mixed_latin1.txt", "bad_name_\\xff.txt"} <= ids
        assert not {"deep", "nan", "big", "sur"} & ids
        assert index.search("latin1")[0].document_id == "mixed_latin1.txt"


def test_cli_reports_every_bad_file_and_exits_non_zero(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    for i in range(51):
        (folder / f"good{i:02d}.txt").write_text(f"good note {i} marker{i}\n")
    (folder / "bad.txt").write_bytes(b"first line\nsecond \xff line\n")
    (folder / os.fsdecode(b"name\xfe.txt")).write_text("fine text, odd name\n")
    proc = run_cli("index", str(folder), index=tmp_path / "c.db")
    assert proc.returncode == 1, proc.stderr
    assert "indexed 51 document(s)" in proc.stdout and "2 failed" in proc.stdout
    assert f"failed {folder}/bad.txt: invalid UTF-8 at byte 18, line 2" in proc.stderr
    assert f"failed {folder}/name\\xfe.txt: the file name is not valid UTF-8" in proc.stderr
    assert "error: 2 of 53 file(s) could not be indexed" in proc.stderr
    assert "Traceback" not in proc.stderr
    as_json = run_cli("index", str(folder), "--json", index=tmp_path / "c.db")
    report = json.loads(as_json.stdout)
    assert as_json.returncode == 1 and report["ok"] is False and report["documents_unchanged"] == 51
    assert {(f["code"], f["offset"], f["line"]) for f in report["failed"]} == {
        ("invalid_utf8", 18, 2),
        ("bad_input", None, None),
    }
    fast = run_cli("index", str(folder), "--fail-fast", index=tmp_path / "f.db")
    assert fast.returncode == 1 and "invalid UTF-8 at byte 18" in fast.stderr
    assert "indexed" not in fast.stdout  # stopped at the first bad file
    lenient = run_cli("index", str(folder), "--lenient", index=tmp_path / "l.db")
    assert lenient.returncode == 0 and "indexed 53 document(s)" in lenient.stdout


def test_cli_max_file_size(tmp_path: Path) -> None:
    big = tmp_path / "big.txt"
    big.write_text("word " * 1000)
    proc = run_cli("index", str(big), "--max-file-size", "1K", index=tmp_path / "m.db")
    assert proc.returncode == 1
    assert "big.txt is 5,000 bytes, over the 1,024-byte limit" in proc.stderr
    assert "--max-file-size" in proc.stderr
    assert (
        run_cli("index", str(big), "--max-file-size", "0", index=tmp_path / "m.db").returncode == 0
    )
    bad = run_cli("index", str(big), "--max-file-size", "lots", index=tmp_path / "m.db")
    assert bad.returncode == 2 and "not a size" in bad.stderr


def test_deep_jsonl_is_a_record_error_not_a_recursion_error(tmp_path: Path) -> None:
    depth = 100_000
    lines = [
        '{"id": "a", "text": "alpha record"}',
        '{"id": "d", "text": "t", "m": ' + "[" * depth + "]" * depth + "}",
        '{"id": "s", "text": "in a string [[[[ {{{{ is fine", "m": "' + "[" * 1000 + '"}',
        '{"id": "b", "text": "beta record"}',
    ]
    path = tmp_path / "deep.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(RecordError, match=f"line 2: nested deeper than {MAX_DEPTH} levels"):
        list(read_jsonl(lines, str(path)))
    with Index(tmp_path / "i.db") as index:
        report = _index(index, path, lenient=True)
        assert report.documents == 3 and not report.failed
        strict = _index(index, path)
        assert [(f.code, f.line) for f in strict.failed] == [("bad_record", 2)]
    edge = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert not too_deep(edge) and too_deep("[" + edge + "]")
    assert not too_deep('"' + "[" * 5000 + '"')  # brackets inside a string do not nest
    assert too_deep('["\\"", ' + "[" * 300 + "]" * 300 + "]")  # an escaped quote ends nothing


def test_non_regular_files_are_never_opened(tmp_path: Path) -> None:
    folder = tmp_path / "f"
    folder.mkdir()
    os.mkfifo(folder / "a.txt")
    (folder / "b.txt").write_text("plain file beside a fifo")
    outcome: dict = {}

    def run() -> None:
        with Index(tmp_path / "i.db") as index:
            outcome["report"] = _index(index, folder)
            outcome["explicit"] = _index(index, folder / "a.txt")

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(timeout=30)
    assert not worker.is_alive(), "indexing blocked on a FIFO"
    assert outcome["report"].skipped == [(str(folder / "a.txt"), "not a regular file (FIFO)")]
    assert outcome["report"].documents == 1
    assert outcome["explicit"].skipped == [(str(folder / "a.txt"), "not a regular file (FIFO)")]


def test_symlink_loops_and_dangling_links_are_skipped_with_a_warning(tmp_path: Path) -> None:
    folder = tmp_path / "f"
    folder.mkdir()
    (folder / "self.txt").symlink_to("self.txt")
    (folder / "gone.txt").symlink_to("missing.txt")
    (folder / "ok.txt").write_text("survivor text")
    with Index(tmp_path / "i.db") as index:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            report = index.index_path(folder)
        assert sorted(str(w.message).rsplit(": ", 1)[1] for w in caught) == [
            "dangling symbolic link",
            "symbolic link loop",
        ]
        assert sorted(r for _, r in report.skipped) == [
            "dangling symbolic link",
            "symbolic link loop",
        ]
        assert report.documents == 1
        with pytest.warns(UserWarning, match="symbolic link loop"):
            alone = index.index_path(folder / "self.txt")
        assert alone.skipped == [(str(folder / "self.txt"), "symbolic link loop")]


def test_reads_stop_at_the_size_seen_at_open(tmp_path: Path) -> None:
    path = tmp_path / "growing.txt"
    path.write_bytes(b"x" * 3_000_000)
    real = Path(os.path.realpath(path))
    with OpenFile(real, real.parent, "growing.txt", ReadPolicy()) as opened:
        with path.open("ab") as handle:
            handle.write(b"y" * 5_000_000)  # grows while it is being read
        read = sum(len(b) for b in opened.blocks())
        assert read == 3_000_000
        with pytest.raises(FileChanged, match="changed while it was being read"):
            opened.check_unchanged()


def test_a_file_growing_while_indexed_is_bounded_and_typed(tmp_path: Path) -> None:
    """A log appended to while it is indexed (in parts): a typed outcome every time."""
    path = tmp_path / "log.txt"
    path.write_bytes(b"start of the log\n" * 20_000)
    stop = threading.Event()

    def append() -> None:  # about 100 KB/s, for as long as the test indexes
        with path.open("ab") as handle:
            while not stop.is_set():
                handle.write(b"more log lines appended forever\n" * 30)
                handle.flush()
                time.sleep(0.01)

    writer = threading.Thread(target=append, daemon=True)
    writer.start()
    try:
        with Index(tmp_path / "i.db") as index:
            for _ in range(3):
                policy = ReadPolicy(max_file_size=0, part_chars=100_000)
                report = _index(index, path, policy=policy)
                assert {f.code for f in report.failed} <= {"file_changed"}
                assert report.failed or report.documents + report.unchanged >= 1
    finally:
        stop.set()
        writer.join()
    assert path.stat().st_size < 50_000_000


def test_size_limit_and_hard_links(tmp_path: Path) -> None:
    inside, outside = tmp_path / "in", tmp_path / "out"
    inside.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("hardlinked secret")
    os.link(outside / "secret.txt", inside / "linked.txt")
    (inside / "big.txt").write_text("b" * 2000)
    real = Path(os.path.realpath(inside))
    policy = ReadPolicy(roots=(real,), allow_hardlinks=False, max_file_size=1000)
    found = {f.path.name: f for f in discover_files([inside], policy=policy)}
    with pytest.raises(FileRefused, match="2 hard links"):
        load_file(found["linked.txt"], policy=policy)
    with pytest.raises(FileTooLarge, match="2,000 bytes, over the 1,000-byte limit"):
        load_file(found["big.txt"], policy=policy)
    allowed = ReadPolicy(roots=(real,), allow_hardlinks=True)
    docs = list(load_file(found["linked.txt"], policy=allowed).documents)
    assert docs[0].id == "linked.txt"  # the library and CLI read them: the user named them


# -- what is read is what was checked -----------------------------------------------------------
FLIPPER = Path(__file__).with_name("flipper.py")


def start_flipper(mode: str, first: Path, second: Path) -> subprocess.Popen:
    """Another process swapping `first` between inside and outside content (truly parallel)."""
    return subprocess.Popen([sys.executable, str(FLIPPER), mode, str(first), str(second)])


def race_tree(base: Path) -> tuple[Path, Path]:
    """root/d/flip.txt (inside words) and outside/secret.txt + outside/flip.txt (a secret)."""
    root, outside = base / "root", base / "outside"
    (root / "d").mkdir(parents=True)
    outside.mkdir()
    (root / "d" / "flip.txt").write_text("inside words only\n")
    (outside / "secret.txt").write_text("outside swordfish secret\n")
    (outside / "flip.txt").write_text("outside swordfish secret\n")
    return root, outside


@pytest.mark.parametrize("level", ["file", "folder"])
def test_swap_race_never_reads_outside(tmp_path: Path, level: str) -> None:
    """A file (or a folder in its path) flips between inside content and a link to outside
    while it is checked and read: outside content is never read (today's code: some)."""
    root, outside = race_tree(tmp_path)
    policy = ReadPolicy(roots=(Path(os.path.realpath(root)),))
    if level == "file":
        flipper = start_flipper("file", root / "d" / "flip.txt", outside / "secret.txt")
    else:
        flipper = start_flipper("folder", root / "d", outside)
    rounds, leaks, reads = 1500, 0, 0
    try:
        for _ in range(rounds):
            try:
                files = discover_files([root / "d" / "flip.txt"], policy=policy)
            except PathNotFound:  # the name was between two renames: nothing read
                continue
            for found in files:
                try:
                    loaded = load_file(found, policy=policy)
                except FileChanged:
                    continue
                for doc in loaded.documents:
                    reads += 1
                    leaks += "swordfish" in doc.text
    finally:
        flipper.kill()
        flipper.wait()
    print(f"{level}: {rounds} rounds, {reads} reads, {leaks} leaks")
    assert leaks == 0 and reads > 0
