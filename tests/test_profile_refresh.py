"""When adaptive fusion's profile is taken (issue 23, "nothing given back"): at once only for a
collection that has none; a profile a bulk load leaves stale is refreshed once writes pause,
by `optimize` (what `ragloom index` runs before it exits), or by a writable opener, never
batch by batch. `close()` gives a refresh up midway without writing half of it. Real SQLite
files, a real embedding model stand-in computed in-process (vectors with topic structure)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pytest

import ragloom.engine.calibration as calibration
import ragloom.engine.refresh as refresh
from ragloom import Document, Index
from ragloom.embedding.base import Embedder, normalize_rows
from ragloom.errors import EmbedFailed

WORDS = [
    "amber",
    "basalt",
    "cedar",
    "delta",
    "ember",
    "fjord",
    "garnet",
    "harbor",
    "iris",
    "jasper",
    "kelp",
    "lumen",
]


class Topics(Embedder):
    """Vectors with neighbour structure: one direction per topic word, a little noise."""

    name = "test-profile-topics"
    dimension = 16

    def __init__(self, delay: float = 0.0) -> None:
        super().__init__()
        self.delay = delay
        self.calls = 0
        self.down = False  # the service is down: every call fails

    def _embed_batch(self, texts):
        self.calls += 1
        if self.down:
            raise EmbedFailed("embedding service down (test)")
        if self.delay:
            time.sleep(self.delay)
        out = []
        for text in texts:
            words = text.split()
            topic = words[0] if words else text
            base = np.random.default_rng(sum(map(ord, topic))).standard_normal(self.dimension)
            noise = np.random.default_rng(sum(map(ord, text)) * 7).standard_normal(self.dimension)
            out.append(base + 0.3 * noise)
        return normalize_rows(np.array(out, np.float32))


def _docs(lo: int, hi: int) -> list[Document]:
    def text(i: int) -> str:
        words = [WORDS[(i * k + 3) % len(WORDS)] for k in range(1, 15)]
        return f"{WORDS[i % len(WORDS)]} note {i} " + " ".join(words) + f" item{i}."

    return [Document(f"d{i}", text(i)) for i in range(lo, hi)]


def _profile(index: Index) -> dict:
    return dict(index.stats()["collections"]["default"]["config"]["fusion_profile"])


def _wait_for(condition, timeout: float = 20.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


@pytest.fixture
def quick_refresh(monkeypatch):
    """Stale profiles are refreshed 0.3 s after the last write (15 s by default)."""
    monkeypatch.setattr(refresh, "PROFILE_AFTER", 0.3)


@pytest.fixture
def no_refresh(monkeypatch):
    """No idle refresh within a test."""
    monkeypatch.setattr(refresh, "PROFILE_AFTER", 3600.0)


def _stale(index: Index) -> list[str]:
    """The collections whose profile is missing or stale (`calibration.needs_profile`)."""
    with index.store.snapshot() as snap:
        return [
            name
            for name in sorted(snap.collections())
            if calibration.needs_profile(snap.collection(name).config, snap.collection(name).size())
        ]


def test_a_bulk_load_in_batches_profiles_once_not_batch_by_batch(tmp_path: Path, no_refresh):
    with Index(tmp_path / "bulk.db", embedder=Topics()) as index:
        index.add(_docs(0, 100))
        first = _profile(index)
        assert first["chunks"] == 100 and first["probes"] >= calibration.MIN_PROBES
        for lo in range(100, 600, 100):  # grows sixfold: stale after the second batch
            index.add(_docs(lo, lo + 100))
        assert _profile(index) == first  # left for when writes pause
        assert _stale(index) == ["default"]


def test_a_stale_profile_is_refreshed_once_writes_pause(tmp_path: Path, quick_refresh):
    with Index(tmp_path / "pause.db", embedder=Topics()) as index:
        index.add(_docs(0, 100))
        for lo in range(100, 400, 100):
            index.add(_docs(lo, lo + 100))
        assert _wait_for(lambda: _profile(index)["chunks"] == 400)
        assert _stale(index) == []
        fresh = _profile(index)
    with Index(tmp_path / "same.db", embedder=Topics()) as whole:
        whole.add(_docs(0, 400))  # one add of the same chunks: the same profile
        assert _profile(whole) == fresh


def test_optimize_refreshes_a_stale_profile_as_one_of_its_steps(tmp_path: Path, no_refresh):
    with Index(tmp_path / "opt.db", embedder=Topics()) as index:
        index.add(_docs(0, 100))
        index.add(_docs(100, 300))
        assert _profile(index)["chunks"] == 100
        steps: list[str] = []
        done = index.optimize(on_step=lambda n, what: steps.append(what))
        assert _profile(index)["chunks"] == 300
        assert done == len(steps) and "fusion profile of default (300 chunks)" in steps
        assert index.optimize() == 0  # nothing left to do


def test_optimize_with_the_embedding_service_down_warns_and_keeps_the_old_profile(
    tmp_path: Path, no_refresh
):
    model = Topics()
    with Index(tmp_path / "down.db", embedder=model) as index:
        index.add(_docs(0, 100))
        index.add(_docs(100, 300))
        model.down = True
        with pytest.warns(UserWarning, match="fusion profile not updated"):
            index.optimize()
        assert _profile(index)["chunks"] == 100
        model.down = False
        assert index.optimize() == 1 and _profile(index)["chunks"] == 300


def _leave_stale(path: Path) -> None:
    """A bulk load whose process hands its pending work on at close (or is killed before):
    the profile taken after its first batch is left stale."""
    index = Index(path, embedder=Topics())
    index.add(_docs(0, 100))
    index.add(_docs(100, 300))
    index.close(finish=False)


def test_a_builder_refreshes_its_stale_profile_at_close(tmp_path: Path, monkeypatch):
    path = tmp_path / "built.db"
    monkeypatch.setattr(refresh, "PROFILE_AFTER", 3600.0)
    with Index(path, embedder=Topics()) as index:
        index.add(_docs(0, 100))
        index.add(_docs(100, 300))
        assert _profile(index)["chunks"] == 100
    with Index(path, embedder=Topics(), read_only=True) as reader:
        assert _profile(reader)["chunks"] == 300


def test_a_writable_opener_refreshes_what_an_earlier_process_left_stale(
    tmp_path: Path, monkeypatch
):
    path = tmp_path / "left.db"
    monkeypatch.setattr(refresh, "PROFILE_AFTER", 3600.0)
    _leave_stale(path)
    monkeypatch.setattr(refresh, "PROFILE_AFTER", 0.3)
    with Index(path, embedder=Topics(), read_only=True) as reader:
        time.sleep(1.0)  # a reader never writes a profile
        assert _profile(reader)["chunks"] == 100
    with Index(path, embedder=Topics()) as opener:
        assert _wait_for(lambda: _profile(opener)["chunks"] == 300)


def test_close_gives_a_refresh_up_midway_and_writes_nothing(tmp_path: Path, monkeypatch):
    path = tmp_path / "close.db"
    monkeypatch.setattr(refresh, "PROFILE_AFTER", 3600.0)
    _leave_stale(path)
    monkeypatch.setattr(refresh, "PROFILE_AFTER", 0.1)
    slow = Topics(delay=0.5)  # 200 probes, 2 batches of embeddings a probe batch: ~7 s
    started = threading.Event()
    real = calibration.profile_collection

    def watched(*args, **kwargs):
        started.set()
        return real(*args, **kwargs)

    monkeypatch.setattr(calibration, "profile_collection", watched)
    index = Index(path, embedder=slow)
    assert started.wait(10.0)
    calls = slow.calls
    index.close()
    assert slow.calls - calls <= 2  # stopped at its next batch of probes, not at the end
    with Index(path, embedder=Topics(), read_only=True) as reader:
        assert _profile(reader)["chunks"] == 100  # the old profile, whole


def test_a_setting_changed_while_the_probes_run_is_kept(tmp_path: Path, monkeypatch):
    with Index(tmp_path / "race.db", embedder=Topics()) as index:
        index.add(_docs(0, 100))
        real = calibration.profile_collection

        def meanwhile(*args, **kwargs):
            profile = real(*args, **kwargs)
            index.configure(bm25={"k1": 1.7, "b": 0.6})  # another thread's change
            return profile

        monkeypatch.setattr(calibration, "profile_collection", meanwhile)
        index.calibrate(force=True)
        config = index.stats()["collections"]["default"]["config"]
        assert config["bm25"]["k1"] == 1.7 and config["fusion_profile"]["chunks"] == 100
