"""The watcher keeps the index equal to the folder (issue 46): edits as editors make them,
lexical first and vectors after (reused, never embedded again, for a renamed file), a sweep
that catches what events missed, polling where events are unavailable, one watcher per
index. Every wait is on a condition with a generous timeout: no wall-clock assertions."""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from ragloom import Index
from ragloom.cli import cli
from ragloom.errors import InputError, WriterBusy
from ragloom.watch import Watcher, events

from .embed_server import EmbedServer
from .format_files import report_pdf

WAIT = 60.0  # seconds a condition may take on a busy machine


def eventually(check: Callable[[], bool], timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not true within {timeout} s: {check.__doc__ or check}")
        time.sleep(0.02)


def found(index: Index, word: str) -> list[str]:
    return sorted({h.document_id for h in index.search(word, top_k=50, mode="lexical")})


def ids(index: Index) -> list[str]:
    return sorted(d.doc_id for d in index.documents(limit=1000))


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The watcher keeps its marks in the user's cache folder: this test's own."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    write(folder / "dragons.md", "# Dragons\n\nThe wyrmqueen sleeps under the glacier.")
    write(folder / "places.txt", "Karsh is a fortress city carved into basalt.")
    return folder


def test_edits_as_editors_make_them(notes: Path, locate) -> None:
    with Index(locate()) as index, Watcher(index, [notes]) as watcher:
        assert ids(index) == ["dragons.md", "places.txt"]
        write(notes / "places.txt", "Karsh was rebuilt in granite.")  # in place
        eventually(lambda: found(index, "granite") == ["places.txt"])
        assert found(index, "basalt") == []
        temp = write(notes / ".dragons.md.tmp123", "# Dragons\n\nThe wyrmqueen woke at dawn.")
        os.replace(temp, notes / "dragons.md")  # an atomic save: temp renamed over
        eventually(lambda: found(index, "dawn") == ["dragons.md"])
        assert found(index, "glacier") == []
        os.rename(notes / "places.txt", notes / "cities.txt")  # rename: the new path, new id
        eventually(lambda: ids(index) == ["cities.txt", "dragons.md"])
        assert found(index, "granite") == ["cities.txt"]
        (notes / "cities.txt").unlink()
        eventually(lambda: ids(index) == ["dragons.md"])
        for scratch in ("dragons.md.swp", "dragons.md~", "#dragons.md#", "draft.tmp"):
            write(notes / scratch, "scratchword")
        write(notes / "lore" / "deep" / "river.md", "The river Olun floods.")
        eventually(lambda: ids(index) == ["dragons.md", "lore/deep/river.md"])
        moved = notes.parent / "outside"
        write(moved / "kept" / "isle.md", "The isle of Vey drifts north.")
        os.rename(moved / "kept", notes / "kept")  # a whole folder moved in
        eventually(lambda: "kept/isle.md" in ids(index))
        shutil.rmtree(notes / "lore")  # a whole folder removed
        eventually(lambda: ids(index) == ["dragons.md", "kept/isle.md"])
        assert found(index, "scratchword") == []
        assert watcher.describe()["mode"] == "native"


def test_gitignore_and_globs_apply_to_changes(notes: Path, tmp_path: Path) -> None:
    with Index(tmp_path / "i.db") as index, Watcher(index, [notes], exclude=["drafts/*"]):
        write(notes / "drafts" / "idea.md", "draftword")
        write(notes / "build.log.md", "logword")
        write(notes / "note.md", "noteword")
        eventually(lambda: found(index, "noteword") == ["note.md"])
        assert found(index, "draftword") == []
        write(notes / ".gitignore", "*.log.md\nnote.md\n")  # the rules change: a sweep
        eventually(lambda: found(index, "noteword") == [])
        assert "build.log.md" not in ids(index)
        write(notes / "again.log.md", "logword again")
        write(notes / "fresh.md", "freshword")
        eventually(lambda: found(index, "freshword") == ["fresh.md"])
        assert found(index, "logword") == []


def test_every_format_is_watched_the_same_way(notes: Path, tmp_path: Path) -> None:
    with Index(tmp_path / "i.db") as index, Watcher(index, [notes]):
        write(notes / "tool.py", "def safe_fetch():\n    return 'ferrywire'\n")
        write(notes / "records.jsonl", '{"id": "r1", "text": "a record about quillmoss"}\n')
        eventually(lambda: found(index, "ferrywire") == ["tool.py"])
        eventually(lambda: found(index, "quillmoss") == ["r1"])


def test_converted_formats_are_watched_and_kinds_left_out_stay_out(
    notes: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A PDF saved into the folder is converted (its hits carry their page); an image is
    left out by the default rules, as `ragloom index` leaves it out; a file of no supported
    format is named, never dropped silently."""
    caplog.set_level(logging.WARNING, "ragloom.watch")
    with Index(tmp_path / "i.db", embedder="none") as index, Watcher(index, [notes]):
        (notes / "photo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(64))
        (notes / "survey.pdf").write_bytes(report_pdf())
        (notes / "blob.weird").write_bytes(bytes(range(256)) * 4)
        eventually(lambda: found(index, "obsidian") == ["survey.pdf"])
        hit = index.search("obsidian mirrors", top_k=1, mode="lexical")[0]
        assert hit.place == "p. 2"
        eventually(lambda: any("blob.weird" in r.getMessage() for r in caplog.records))
        named = next(r.getMessage() for r in caplog.records if "blob.weird" in r.getMessage())
        assert "not a supported format" in named
        assert "photo.png" not in ids(index)
        assert not any("photo.png" in r.getMessage() for r in caplog.records)


def test_a_file_that_fails_is_named_and_the_rest_go_on(
    notes: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, "ragloom.watch")
    with Index(tmp_path / "i.db") as index, Watcher(index, [notes]):
        (notes / "broken.md").write_bytes(b"fine start \xff\xfe then garbage")
        write(notes / "fine.md", "finewords arrive")
        eventually(lambda: found(index, "finewords") == ["fine.md"])
        eventually(lambda: any("broken.md" in r.getMessage() for r in caplog.records))
        failed = next(r.getMessage() for r in caplog.records if "broken.md" in r.getMessage())
        assert failed.startswith("failed ") and "UTF-8" in failed


def test_lexical_first_then_vectors_and_a_rename_embeds_nothing(
    notes: Path, tmp_path: Path
) -> None:
    def embedded() -> int:
        return sum(len(r["input"]) for r in service.requests)

    with EmbedServer() as service:
        spec = f"openai:stand-in@{service.url}/v1"
        with Index(tmp_path / "i.db", embedder=spec) as index, Watcher(index, [notes]) as w:
            eventually(lambda: index.pending() == 0)
            service.delay = 8.0  # embedding is the slow part: the words come first
            write(notes / "saga.md", "The saga of Orun tells of salt flats and quiet kings.")
            eventually(lambda: found(index, "Orun") == ["saga.md"])
            hit = index.search("Orun", mode="lexical", explain=True)[0]
            assert hit.pending is True and hit.explain["vector"] == "pending"
            assert hit.to_dict()["pending"] is True
            service.delay = 0.0
            eventually(lambda: index.pending() == 0)
            hit = index.search("Orun", mode="hybrid")[0]
            assert hit.pending is False and hit.match in ("both", "dense")
            before = embedded()
            (notes / "tales").mkdir()
            os.rename(notes / "saga.md", notes / "tales" / "saga.md")  # a move
            eventually(lambda: ids(index) == ["dragons.md", "places.txt", "tales/saga.md"])
            eventually(lambda: index.pending() == 0)
            assert embedded() == before  # the moved file's vectors were reused
            assert index.search("Orun", mode="dense")[0].document_id == "tales/saga.md"
            assert w.describe()["pending"]["vectors"] == 0


def test_a_hit_says_its_vector_is_pending_while_the_service_is_down(
    notes: Path, tmp_path: Path
) -> None:
    with EmbedServer() as service:
        spec = f"openai:stand-in@{service.url}/v1"
        with Index(tmp_path / "i.db", embedder=spec) as index, Watcher(index, [notes]) as w:
            eventually(lambda: index.pending() == 0)
            service.mode = "500"
            write(notes / "saga.md", "The saga of Orun tells of salt flats.")
            eventually(lambda: found(index, "Orun") == ["saga.md"])
            hit = index.search("Orun", mode="lexical", explain=True)[0]
            assert hit.pending is True and hit.explain["vector"] == "pending"
            assert w.describe()["pending"]["vectors"] > 0
            shown = CliRunner().invoke(
                cli, ["--index", str(tmp_path / "i.db"), "search", "Orun", "--mode", "lexical"]
            )
            assert "its vector is pending" in shown.output
            as_json = CliRunner().invoke(
                cli, ["--index", str(tmp_path / "i.db"), "search", "Orun", "--json"]
            )
            assert json.loads(as_json.output)["results"][0]["pending"] is True
            service.mode = "ok"
            w._fill_after = 0.0  # the service is back: no need to wait out the back-off
            eventually(lambda: index.pending() == 0)
            assert index.search("Orun", mode="lexical")[0].pending is False


def test_stop_writes_what_is_queued(notes: Path, tmp_path: Path) -> None:
    with Index(tmp_path / "i.db") as index:
        watcher = Watcher(index, [notes], quiet=5.0, longest=30.0)  # batches wait long
        watcher.start()
        for i in range(20):
            write(notes / f"n{i}.md", f"queuedword{i}")
        eventually(lambda: watcher.queue.pending() >= 20)
        watcher.stop()
        assert len(ids(index)) == 22
        assert found(index, "queuedword7") == ["n7.md"]


def test_stop_sweeps_once_more_for_events_not_yet_delivered(notes: Path, tmp_path: Path) -> None:
    """Changes whose events the OS had not handed over when listening stopped (a busy
    machine, a SIGTERM right after a burst of edits) are written by the last sweep: the
    index ends equal to the folder."""
    with Index(tmp_path / "i.db") as index:
        watcher = Watcher(index, [notes])
        watcher.start()
        watcher._events.stop()  # nothing more is heard from the OS
        write(notes / "late.md", "lateword")
        (notes / "places.txt").unlink()
        watcher.stop()
        assert found(index, "lateword") == ["late.md"]
        assert ids(index) == ["dragons.md", "late.md"]


def test_what_events_miss_a_sweep_catches(notes: Path, tmp_path: Path) -> None:
    with Index(tmp_path / "i.db") as index, Watcher(index, [notes]) as watcher:
        watcher._events.stop()  # the OS stops telling (an overflow loses events)
        write(notes / "unheard.md", "unheardword")
        (notes / "places.txt").unlink()
        time.sleep(0.5)
        assert found(index, "unheardword") == []
        watcher.queue.put([], lost=True)  # what the overflow handler sends
        eventually(lambda: ids(index) == ["dragons.md", "unheard.md"])
        assert watcher.describe()["events_lost"] == 1


def test_an_overflow_logged_by_watchdog_is_a_lost_batch() -> None:
    heard: list[bool] = []
    handler = events._Overflows(lambda paths, lost: heard.append(lost))
    logger = logging.getLogger(events.OVERFLOW_LOGGER)
    logger.addHandler(handler)
    try:
        logger.warning("Inotify queue overflowed; filesystem events were lost")
    finally:
        logger.removeHandler(handler)
    assert heard == [True]


def test_without_native_events_it_polls_and_says_so_once(
    notes: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog
) -> None:
    from ragloom.watch import watcher as watching

    monkeypatch.setattr(watching, "POLL_AT_LEAST", 0.2)
    monkeypatch.setattr(watching, "native_events", lambda *a: (None, "inotify watch limit reached"))
    caplog.set_level(logging.WARNING, "ragloom.watch")
    with Index(tmp_path / "i.db") as index, Watcher(index, [notes]) as watcher:
        state = watcher.describe()
        assert state["mode"] == "polling" and "limit" in state["note"]
        write(notes / "polled.md", "polledword")
        eventually(lambda: found(index, "polledword") == ["polled.md"])
        (notes / "dragons.md").unlink()
        eventually(lambda: "dragons.md" not in ids(index))
    said = [r for r in caplog.records if "polling" in r.getMessage()]
    assert len(said) == 1


def test_one_watcher_per_index(notes: Path, locate) -> None:
    location = locate()
    with Index(location) as index, Watcher(index, [notes]):
        with Index(location) as other, pytest.raises(WriterBusy) as refused:
            Watcher(other, [notes]).start()
        assert "watching" in refused.value.message
        assert found(index, "basalt") == ["places.txt"]  # searches go on


def test_a_watcher_watches_folders(notes: Path, tmp_path: Path) -> None:
    with Index(tmp_path / "i.db") as index:
        with pytest.raises(InputError, match="not a folder"):
            Watcher(index, [notes / "places.txt"])
        with pytest.raises(InputError, match="no such folder"):
            Watcher(index, [notes / "missing"])


def test_a_vanished_folder_removes_nothing(notes: Path, tmp_path: Path) -> None:
    with Index(tmp_path / "i.db") as index, Watcher(index, [notes]) as watcher:
        away = notes.rename(tmp_path / "away")
        watcher.queue.put([], lost=True)  # sweep now
        eventually(lambda: watcher.describe()["last_sweep"] is not None)
        time.sleep(0.3)
        assert ids(index) == ["dragons.md", "places.txt"]
        away.rename(notes)


def test_a_network_file_system_is_polled(tmp_path: Path, monkeypatch) -> None:
    mounts = tmp_path / "mounts"
    mounts.write_text(
        "/dev/sda1 / ext4 rw 0 0\n"
        f"server:/export {tmp_path / 'share'} nfs4 rw,relatime 0 0\n"
        f"//host/docs {tmp_path / 'smb'} cifs rw 0 0\n"
    )
    monkeypatch.setattr(events, "MOUNTS", mounts)
    assert events.remote_file_system(tmp_path / "share" / "notes") == "nfs4"
    assert events.remote_file_system(tmp_path / "smb") == "cifs"
    assert events.remote_file_system(tmp_path / "shared") is None  # not under the mount
    assert events.remote_file_system(tmp_path / "local") is None
    feed, why = events.native_events([tmp_path / "share" / "notes"], lambda *a: None)
    assert feed is None and "network file system (nfs4)" in why


def test_a_checkout_of_thousands_of_files_lands_in_a_few_batches(
    notes: Path, tmp_path: Path
) -> None:
    with Index(tmp_path / "i.db") as index, Watcher(index, [notes]) as watcher:
        before = watcher.describe()["batches"]
        for i in range(2000):  # as `git checkout` writes them: all at once
            write(notes / f"d{i // 200}" / f"f{i:04d}.md", f"checkout{i}x word")
        eventually(lambda: index.stats()["documents"] == 2002)
        assert found(index, "checkout1999x") == ["d9/f1999.md"]
        # (a batch is counted just after its commit, which a busy machine lets a reader see)
        eventually(lambda: watcher.describe()["batches"] > before)
        batches = watcher.describe()["batches"] - before
        assert 1 <= batches <= 40  # coalesced: never one write per file


def test_the_queue_coalesces_a_burst_into_one_batch() -> None:
    from ragloom.watch.changes import ChangeQueue

    queue = ChangeQueue(quiet=0.2, longest=30.0)
    for i in range(1000):
        queue.put([f"/notes/f{i}.md"])
    batch = queue.take(timeout=WAIT)
    assert batch is not None and len(batch.paths) == 1000 and not batch.lost
    assert queue.take(timeout=0.01) is None
    queue.put([], lost=True)
    assert queue.take(timeout=WAIT).lost


def test_what_a_sweep_keeps_follows_the_folder(notes: Path, tmp_path: Path) -> None:
    """The watcher remembers each live file once: deleted and renamed files are forgotten
    (a long watch does not grow with the files that came and went)."""
    with Index(tmp_path / "i.db") as index, Watcher(index, [notes]) as watcher:
        for i in range(30):
            path = write(notes / f"tmp{i}.md", f"passing{i}x")
            eventually(lambda p=path: p.name in " ".join(ids(index)))
            os.rename(path, notes / f"kept{i}.md") if i % 2 else path.unlink()
        eventually(lambda: len(ids(index)) == 17)
        eventually(lambda: len(watcher.marks) == 17)


def test_a_new_watcher_reads_only_what_changed_while_none_ran(notes: Path, locate) -> None:
    location = locate()
    with Index(location) as index:
        with Watcher(index, [notes]) as first:
            assert first.describe()["pending"]["paths"] == 0
        with Watcher(index, [notes]) as again:  # nothing changed: nothing read
            pass
        assert again.start_report.files == 0
        write(notes / "places.txt", "Karsh was rebuilt in granite.")
        index.delete("dragons.md")  # by hand, while no watcher ran: its mark is not trusted
        with Watcher(index, [notes]) as third:
            assert third.start_report.files == 2
            assert found(index, "granite") == ["places.txt"]
            assert found(index, "wyrmqueen") == ["dragons.md"]


def test_a_batch_the_store_refused_is_caught_up_by_a_sweep(
    notes: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragloom.errors import StorageError
    from ragloom.watch import watcher as watching

    monkeypatch.setattr(watching, "RETRY_SWEEP", 0.2)
    with Index(tmp_path / "i.db") as index, Watcher(index, [notes]) as watcher:
        real = index.index_run
        failures: list[str] = []

        def refuse_once(*args, **kwargs):
            if not failures:
                failures.append("disk full")
                raise StorageError("the disk is full", "free some space")
            return real(*args, **kwargs)

        monkeypatch.setattr(index, "index_run", refuse_once)
        write(notes / "late.md", "lateword")
        eventually(lambda: found(index, "lateword") == ["late.md"])
        assert failures and watcher.describe()["last_error"] == "the disk is full"
