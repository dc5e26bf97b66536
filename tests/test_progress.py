"""Embedding progress you can trust: the index report says how many passages were embedded
and how long it took, and the CLI's progress bar shows passages/s and time remaining."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

from ragloom import Document, Index
from ragloom.console_widgets import embedding_status, expected_passages
from ragloom.embedding.http import OllamaEmbedder
from ragloom.embedding.progress import EmbeddingMeter, measure_embedding

from .embed_server import EmbedServer
from .test_cli import ragloom

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_report_counts_embedded_passages_and_their_time(tmp_path: Path):
    docs = [Document(f"d{i}", f"passage number {i} about lanterns and keys") for i in range(7)]
    with EmbedServer() as server:
        server.delay = 0.05
        embedder = OllamaEmbedder(server.url, "m", batch_size=3, retry_delay=0.01)
        batches: list[tuple[int, int]] = []
        with (
            Index(tmp_path / "p.db", embedder=embedder) as index,
            measure_embedding(lambda m: batches.append((m.queued, m.passages))) as outer,
        ):
            report = index.add(docs)
            assert report.embedded == 7 and report.chunks == 7
            assert 3 * 0.05 <= report.embedding_seconds < 5
            assert report.to_dict()["embedded"] == 7
            again = index.add(docs)  # unchanged: nothing embedded
            assert again.embedded == 0 and again.embedding_seconds == 0
        assert batches == [(7, 0), (7, 3), (7, 6), (7, 7)]  # an outer meter sees it all too
        assert outer.passages == 7 and outer.rate > 0


def test_status_and_expected_total():
    assert embedding_status(EmbeddingMeter()) == ""
    assert embedding_status(EmbeddingMeter(passages=1234, seconds=30.0)) == "41.1 passages/s"
    assert expected_passages(500, 0, 0) == 500  # documents given directly: what is queued
    assert expected_passages(500, 10, 40) == 2000  # a quarter of the files read so far
    assert expected_passages(500, 40, 40) == 500


def test_cli_reports_embedding_time(tmp_path: Path):
    with EmbedServer() as server:
        spec = f"ollama:m@{server.url}"
        done = ragloom("--embedder", spec, "index", str(DOCS), "--json", index=tmp_path / "c.db")
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        assert report["embedded"] == report["chunks"] > 0 and report["embedding_seconds"] > 0
        plain = ragloom("--embedder", spec, "index", str(DOCS), index=tmp_path / "d.db")
        assert "passages/s)" in plain.stdout and "embedded" in plain.stdout


def test_cli_progress_bar_on_a_terminal(tmp_path: Path):
    """Run `ragloom index` with stderr on a pseudo-terminal, as a person would see it."""
    folder = tmp_path / "notes"
    folder.mkdir()
    for n in range(12):  # about 240 passages: four requests of 64
        paragraphs = [
            f"Note {n}, part {p}: " + "the lantern keeper walks the quay. " * 8 for p in range(20)
        ]
        (folder / f"note{n}.md").write_text("\n\n".join(paragraphs))
    with EmbedServer() as server:
        server.delay = 0.4  # slow enough for the bar to be drawn between batches
        master, slave = pty.openpty()
        env = {**os.environ, "COLUMNS": "200", "TERM": "xterm"}
        args = ["--index", str(tmp_path / "t.db"), "--embedder", f"ollama:m@{server.url}"]
        proc = subprocess.Popen(
            [sys.executable, "-m", "ragloom", *args, "index", str(folder)],
            stdout=subprocess.PIPE,
            stderr=slave,
            env=env,
        )
        os.close(slave)
        seen = b""
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:
                    break
                if not chunk:
                    break
                seen += chunk
            elif proc.poll() is not None:
                break
        proc.wait(timeout=30)
        os.close(master)
    screen = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", seen.decode("utf-8", "replace"))
    assert proc.returncode == 0
    assert "passages/s" in screen and "embedding" in screen
    assert re.search(r"\d+/\d+ passages", screen)
    assert re.search(r"\d:\d\d:\d\d left", screen)  # the time-remaining column
