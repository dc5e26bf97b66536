"""Per-stage search timings: exclusive nesting, no cost without a timer, real searches."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

import ragloom
from ragloom.timing import STAGES, StageTimer, timed

from .embed_server import EmbedServer


def test_nested_stages_are_exclusive_and_add_up() -> None:
    timer = StageTimer()
    with timer.running():
        with timed("dense"):
            time.sleep(0.02)
            with timed("embed"):
                time.sleep(0.05)
        with timed("lexical"):
            time.sleep(0.01)
    ms = timer.to_dict()
    assert list(ms) == ["embed", "lexical", "dense", "other", "total"]  # pipeline order
    assert ms["embed"] >= 50 and ms["dense"] >= 20
    assert ms["dense"] < 45  # the inner embedding is not counted twice
    parts = sum(v for k, v in ms.items() if k != "total")
    assert parts == pytest.approx(ms["total"], abs=0.05)


def test_stages_outside_the_pipeline_follow_it_in_the_order_they_first_ran() -> None:
    timer = StageTimer()
    with timer.running():
        for name in ("zeta", "hydrate", "alpha", "lexical", "zeta"):
            with timed(name):
                pass
    assert list(timer.to_dict()) == ["lexical", "hydrate", "other", "zeta", "alpha", "total"]


def test_repeated_stage_adds_up_and_timed_without_timer_is_a_no_op() -> None:
    with timed("lexical"):  # no active timer: nothing to record, nothing raised
        pass
    timer = StageTimer()
    with timer.running(rest=None):
        for _ in range(3):
            with timed("fusion"):
                time.sleep(0.005)
    assert timer.to_dict()["fusion"] >= 15
    assert "other" not in timer.to_dict()


def test_parallel_searches_fill_their_own_timers() -> None:
    results: dict[int, dict[str, float]] = {}

    def work(n: int) -> None:
        timer = StageTimer()
        with timer.running(rest=None), timed("lexical" if n % 2 else "dense"):
            time.sleep(0.01)
        results[n] = timer.to_dict()

    threads = [threading.Thread(target=work, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for n, ms in results.items():
        assert set(ms) == {"lexical" if n % 2 else "dense", "total"}


def test_search_reports_each_stage(tmp_path: Path) -> None:
    docs = [ragloom.Document(f"d{i}", f"the silver key {i} opens door {i * 7}") for i in range(30)]
    with EmbedServer() as service:
        spec = f"openai:remote@{service.url}"
        with ragloom.Index(tmp_path / "i.db", embedder=spec) as index:
            index.add(docs)
            hits = index.search("silver key door", top_k=3, mode="hybrid")
            ms = hits.timings
            assert set(ms) <= set(STAGES) | {"total"}
            for stage in ("embed", "lexical", "dense", "fusion", "hydrate", "total"):
                assert ms[stage] >= 0, stage
            assert ms["total"] >= ms["embed"] + ms["dense"] + ms["lexical"]
            assert hits.to_dict()["timings"] == ms
            again = index.search("silver key door", top_k=3, mode="hybrid")
            assert "embed" not in again.timings  # the query vector came from the cache
            lexical = index.search("silver key", mode="lexical")
            assert "dense" not in lexical.timings and "lexical" in lexical.timings
