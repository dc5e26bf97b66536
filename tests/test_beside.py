"""A hybrid search's legs side by side (`ragloom.engine.beside`: the lexical leg on a
worker, the dense leg in the calling thread): where they run, that the worker never outlives
its block, that results do not change, and how their time is reported."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

import ragloom
from ragloom.engine import beside as beside_module
from ragloom.engine import legs as legs_module
from ragloom.engine.beside import WORKERS, Beside
from ragloom.errors import EmbeddingError
from ragloom.timing import StageTimer, timed

from .embed_server import EmbedServer

NOTES = [
    ("forge", "Mira forged the silver key in the harbour smithy at dawn.", "harbour"),
    ("gate", "The north gate opens only to the silver key and the old password.", "city"),
    ("tide", "Spring tides flood the lower harbour twice a month.", "harbour"),
    ("oath", "Captain Ilse swore the oath of the lantern keepers.", "city"),
    ("map", "The smuggler's map marks a tunnel under the lighthouse.", "harbour"),
    ("bell", "The bell of the lighthouse rings when fog rolls in from the sea.", "harbour"),
]


def docs() -> list[ragloom.Document]:
    return [ragloom.Document(i, t, metadata={"place": p}) for i, t, p in NOTES]


def hits_of(result: ragloom.SearchResult) -> list[tuple]:
    return [(h.chunk_id, h.score, h.match, h.lexical_rank, h.dense_rank) for h in result]


def threads(model, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Names of the threads that embed a query with `model` (the real model still embeds)."""
    seen: list[str] = []
    real = model.embed_query

    def recording(text: str):
        seen.append(threading.current_thread().name)
        return real(text)

    monkeypatch.setattr(model, "embed_query", recording)
    return seen


def lexical_threads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Names of the threads that run a search's lexical leg."""
    seen: list[str] = []
    real = legs_module.lexical_side

    def recording(*args):
        seen.append(threading.current_thread().name)
        return real(*args)

    monkeypatch.setattr(legs_module, "lexical_side", recording)
    return seen


def spy_on_beside(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """For each hybrid search from now on, whether its legs ran side by side."""
    started: list[bool] = []

    class Spy(Beside):
        def __init__(self, fn, *args, start: bool = True) -> None:
            super().__init__(fn, *args, start=start)
            started.append(self.in_background)

    monkeypatch.setattr(legs_module, "Beside", Spy)
    return started


def test_a_service_embeds_the_query_beside_the_lexical_leg(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with EmbedServer() as service:
        service.delay = 0.05  # the service thinks; the lexical leg scores meanwhile
        with ragloom.Index(tmp_path / "i.db", embedder=f"openai:remote@{service.url}") as index:
            index.add(docs())
            index.search("silver key", mode="lexical")  # the compiled kernels load once
            seen = threads(index.models.explicit, monkeypatch)
            scored = lexical_threads(monkeypatch)
            beside = index.search("who forged the silver key", top_k=4)
            assert seen == [threading.current_thread().name]  # this thread waits on the service
            assert scored and scored[-1].startswith("ragloom-leg")  # the lexical leg meanwhile
            ms = beside.timings
            for stage in ("embed", "lexical", "dense", "fusion", "hydrate"):
                assert ms[stage] >= 0, stage
            assert ms["embed"] >= 40  # waited for the service, counted once
            parts = sum(v for k, v in ms.items() if k != "total")
            assert parts == pytest.approx(ms["total"], abs=0.05)  # adds up to the wall time
            index.clear_query_cache()
            monkeypatch.setenv("RAGLOOM_PARALLEL_LEGS", "0")
            in_line = index.search("who forged the silver key", top_k=4)
            assert seen[-1] == scored[-1] == threading.current_thread().name
    assert hits_of(beside) == hits_of(in_line) and beside.mode == in_line.mode == "hybrid"


def test_which_dense_legs_run_beside(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A local model embeds in line (it uses every core itself); a vector at hand runs
    beside unless a filter narrows the leg to a few vectors; a service always runs beside."""
    started = spy_on_beside(monkeypatch)
    where = {"place": "harbour"}
    with ragloom.Index(tmp_path / "i.db", embedder="local") as index:
        index.add(docs())
        seen = threads(index.models.explicit, monkeypatch)
        first = index.search("lighthouse fog", top_k=3, filters=where)  # the model embeds
        again = index.search("lighthouse fog", top_k=3, filters=where)  # at hand, filtered
        plain = index.search("lighthouse fog", top_k=3)  # at hand, every chunk's graph
        lexical = index.search("lighthouse fog", top_k=3, mode="lexical")  # no dense leg
    assert started == [False, False, True]
    assert seen == [threading.current_thread().name]
    assert hits_of(first) == hits_of(again) and len(lexical) and len(plain)
    started.clear()
    remote = "openai:remote@{}"
    with (
        EmbedServer() as service,
        ragloom.Index(tmp_path / "s.db", embedder=remote.format(service.url)) as index,
    ):
        index.add(docs())
        index.search("lighthouse fog", top_k=3, filters=where)  # the service embeds
        index.search("lighthouse fog", top_k=3, filters=where)  # at hand, filtered
    assert started == [True, False]


def test_a_filter_leaving_many_chunks_runs_the_legs_side_by_side(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the vector at hand, a filtered hybrid search runs its legs side by side when the
    filter leaves at least `BESIDE_ELIGIBLE` live chunks (deleted ones not counted), else
    in line; the hits are the same either way."""
    started = spy_on_beside(monkeypatch)
    monkeypatch.setattr(legs_module, "BESIDE_ELIGIBLE", 3)
    with ragloom.Index(tmp_path / "i.db", embedder="local") as index:
        index.add(docs())  # four notes of the harbour, two of the city
        index.search("lighthouse fog", top_k=3)  # the model embeds the query (in line)
        started.clear()
        harbour = index.search("lighthouse fog", top_k=3, filters={"place": "harbour"})
        city = index.search("lighthouse fog", top_k=3, filters={"place": "city"})
        monkeypatch.setenv("RAGLOOM_PARALLEL_LEGS", "0")
        in_line = index.search("lighthouse fog", top_k=3, filters={"place": "harbour"})
        monkeypatch.delenv("RAGLOOM_PARALLEL_LEGS")
        index.delete("tide")
        index.delete("map")  # two harbour notes left: fewer than three
        fewer = index.search("lighthouse fog", top_k=3, filters={"place": "harbour"})
    assert started == [True, False, False, False]
    assert len(harbour) == 3 and not city  # (no city note is about the lighthouse)
    assert hits_of(harbour) == hits_of(in_line)  # side by side or in line: the same hits
    assert {h.document_id for h in fewer} == {"forge", "bell"}


def test_an_embedding_service_down_still_degrades_to_the_lexical_leg(tmp_path: Path) -> None:
    with (
        EmbedServer() as service,
        ragloom.Index(tmp_path / "i.db", embedder=f"openai:remote@{service.url}") as index,
    ):
        index.add(docs())
        service.mode = "500"
        index.clear_query_cache()
        hits = index.search("silver key", top_k=3)
        assert hits.degraded and "embedding" in (hits.reason or "").lower()
        assert [h.document_id for h in hits][:2] in (["forge", "gate"], ["gate", "forge"])
        with pytest.raises(EmbeddingError):
            index.search("silver key", top_k=3, strict=True)


def test_beside_runs_on_a_worker_and_hands_back_value_and_error() -> None:
    with Beside(lambda x: (x * 2, threading.current_thread().name), 21) as later:
        assert later.in_background
        value, name = later.result()
    assert value == 42 and name.startswith("ragloom-leg")

    def boom() -> None:
        raise ValueError("leg failed")

    with Beside(boom) as later, pytest.raises(ValueError, match="leg failed"):
        later.result()


def test_beside_runs_in_line_when_asked_or_switched_off(monkeypatch: pytest.MonkeyPatch) -> None:
    here = threading.current_thread().name
    with Beside(lambda: threading.current_thread().name, start=False) as later:
        assert not later.in_background and later.result() == here
    monkeypatch.setenv("RAGLOOM_PARALLEL_LEGS", "0")
    with Beside(lambda: threading.current_thread().name) as later:
        assert not later.in_background and later.result() == here


def test_beside_runs_in_line_when_every_worker_is_busy() -> None:
    release = threading.Event()
    busy = [Beside(release.wait, 5) for _ in range(WORKERS)]
    try:
        assert all(b.in_background for b in busy)
        here = threading.current_thread().name
        with Beside(lambda: threading.current_thread().name) as later:
            assert not later.in_background and later.result() == here
    finally:
        release.set()
        for b in busy:
            assert b.result() is True
    with Beside(lambda: 1) as later:  # the workers are free again
        assert later.in_background and later.result() == 1


def test_leaving_the_block_waits_for_the_work_even_when_the_block_failed() -> None:
    done = threading.Event()

    def slow() -> None:
        time.sleep(0.2)
        done.set()

    with pytest.raises(RuntimeError), Beside(slow) as later:
        assert later.in_background
        raise RuntimeError("the lexical leg failed")
    assert done.is_set()  # the work never outlives the snapshot it reads


def test_time_waited_goes_to_the_stages_that_ran_beside_the_last_first() -> None:
    timer = StageTimer()
    with timer.running():

        def leg() -> None:
            with timed("dense"):
                with timed("embed"):
                    time.sleep(0.06)
                time.sleep(0.03)

        with Beside(leg) as later:
            assert later.in_background
            with timed("lexical"):
                time.sleep(0.05)
            later.result()
    ms = timer.to_dict()
    # the search waited ~40 ms of the leg's ~90: all of dense's last 30, ~10 of embed's 60
    assert ms["dense"] == pytest.approx(30, abs=8)
    assert ms["embed"] < 30 and ms["lexical"] >= 50
    parts = sum(v for k, v in ms.items() if k != "total")
    assert parts == pytest.approx(ms["total"], abs=0.05)
    assert beside_module.enabled()


def test_a_forked_child_runs_its_legs_on_its_own_workers() -> None:
    with Beside(lambda: 1) as later:  # the parent's pool exists now
        assert later.in_background and later.result() == 1
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: the parent's worker threads are gone
        try:
            with Beside(lambda: threading.current_thread().name) as later:
                name = later.result()
            os.write(write, name.encode())
        finally:
            os._exit(0)
    os.close(write)
    deadline = time.monotonic() + 20
    while os.waitpid(pid, os.WNOHANG) == (0, 0):
        if time.monotonic() > deadline:  # a task handed to the parent's threads never runs
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            pytest.fail("the forked child's leg never ran")
        time.sleep(0.05)
    assert os.read(read, 100).decode().startswith("ragloom-leg")
