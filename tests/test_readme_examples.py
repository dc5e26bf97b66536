"""The README's examples run as written: every command of its command-line block (in order,
in a folder holding the files they name), its library example, and its PostgreSQL commands
twice in a row. Left out, each for its reason: `serve` and `mcp` run until stopped (their own
tests drive them), the `--llm ... --rerank onnx:...` search needs an LLM service and a
cross-encoder folder the reader supplies (tests/test_steps*.py run it against stand-ins), and
`eval` / `tune` on SciFact run in the slow test below."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from .conftest import shared_dataset
from .format_files import report_pdf

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
NOT_RUN = ("ragloom serve", "ragloom mcp", "ragloom --llm ")
SLOW = ("ragloom eval ", "ragloom tune ")
WATCHING = " --watch"  # runs until stopped: tests/test_watch_churn.py runs it


def block(after: str, fence: str = "```bash") -> str:
    """The first fenced block of the README after the heading `after`."""
    rest = README.split(after, 1)[1]
    return rest.split(fence, 1)[1].split("```", 1)[0]


def commands(text: str) -> list[str]:
    """Each command of a block: continuations joined, comments and [--optional] parts gone."""
    joined = re.sub(r"\\\n\s*", " ", text)
    out = []
    for line in joined.splitlines():
        line = re.sub(r"\s+#\s.*$", "", line).strip()
        line = re.sub(r"\s\[--[^\]]*\]", "", line)
        if line and not line.startswith("#"):
            out.append(line)
    return out


def environment(**extra: str) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("RAGLOOM_")}
    return {**clean, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{clean['PATH']}", **extra}


def run(line: str, cwd: Path, timeout: float = 600, **env: str) -> subprocess.CompletedProcess:
    args = shlex.split(line)
    assert args[0] == "ragloom", line
    return subprocess.run(
        [sys.executable, "-m", "ragloom", *args[1:]],
        cwd=cwd,
        env=environment(**env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def a_readers_files(folder: Path) -> None:
    """The files the examples name, as a reader of the README would have them."""
    notes = folder / "notes"
    (notes / "drafts").mkdir(parents=True)
    (notes / "key.md").write_text("# The key\n\nMira forged the silver key in the north tower.\n")
    (notes / "old.md").write_text("# Old\n\nAn old note about the archive door at dawn.\n")
    (notes / "drafts" / "idea.md").write_text("A draft idea about the harbour.\n")
    (folder / "lore.md").write_text("# Lore\n\nThe silver key opens the archive. Mira knows it.\n")
    (folder / "records.jsonl").write_text(
        '{"id": "r1", "title": "Persisting models", "text": "SwiftData persists models.",'
        ' "tags": ["SwiftData"], "chapter_num": 9, "scholar_id": "calvin"}\n'
    )
    (folder / "papers").mkdir()
    (folder / "papers" / "survey.pdf").write_bytes(report_pdf())
    (folder / "src").mkdir()
    (folder / "src" / "keys.py").write_text("def forge_key(metal):\n    return f'{metal} key'\n")
    for collection, text in (("chapters", "Mira climbs the tower."), ("characters", "Mira.")):
        (folder / collection).mkdir()
        (folder / collection / "one.md").write_text(text + "\n")
        done = run(f"ragloom index {collection}/ --collection {collection}", folder)
        assert done.returncode == 0, done.stderr


def test_every_command_line_example_runs_as_written(tmp_path: Path) -> None:
    a_readers_files(tmp_path)
    examples = commands(block("## Command line"))
    ran = []
    for line in examples:
        if line.startswith(NOT_RUN + SLOW) or WATCHING in line:
            continue
        done = run(line, tmp_path)
        assert done.returncode == 0, f"{line}\n{done.stdout}\n{done.stderr}"
        assert "Traceback" not in done.stderr
        ran.append(line)
        if line.startswith("ragloom delete"):
            assert re.search(r"deleted \S+ \([1-9]\d* chunk", done.stdout), done.stdout
    assert len(ran) >= 13 and any(x.startswith("ragloom check") for x in ran)


def test_the_library_example_runs_as_written(tmp_path: Path) -> None:
    code = block("## Library", "```python")
    (tmp_path / "lore").mkdir()
    (tmp_path / "lore" / "keys.md").write_text("# Keys\n\nMira forged the silver key.\n")
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=tmp_path,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert "silver key" in done.stdout
    # the hit line: `rank score match chunk_id ...`; a lone hit found by both legs printed
    # `1 0.0 both note-1-0` before adaptive fusion (issue 24): its score says how well it matches
    (line,) = [x for x in done.stdout.splitlines() if x.startswith("1 ")]
    rank, score, match, chunk_id = line.split()[:4]
    assert (match, chunk_id) == ("both", "note-1-0") and 0.2 < float(score) <= 1.0, line


@pytest.mark.slow  # two servers' base backups and the docs embedded: half a minute
def test_the_postgres_commands_run_twice_in_a_row(tmp_path: Path) -> None:
    """README's third command (without its install step) and its PostgreSQL section, each
    run twice: the second start reuses the running server; then `stop` stops it."""
    third = README.split("# 3.", 1)[1].split("```", 1)[0]
    line = next(x for x in third.splitlines() if "local_postgres" in x and "URL=" in x)
    line = line.split("&& ", 1)[1]  # the pip install step is the environment's job here
    section = block("## PostgreSQL").strip()
    folders = re.findall(r"local_postgres (?:start )?(/tmp/[\w-]+)", line + section)
    try:
        for _ in range(2):
            for script in (line, section):
                done = subprocess.run(
                    ["bash", "-ec", script],
                    cwd=ROOT,
                    env=environment(RAGLOOM_INDEX=str(tmp_path / "unused.db")),
                    capture_output=True,
                    text=True,
                    timeout=600,
                )
                assert done.returncode == 0, f"{script}\n{done.stdout}\n{done.stderr}"
                assert "Traceback" not in done.stderr
                assert "chunk" in done.stdout
    finally:
        for folder in set(folders):
            subprocess.run(
                [sys.executable, "-m", "ragloom.local_postgres", "stop", folder, "--remove"],
                capture_output=True,
                timeout=120,
            )


@pytest.mark.slow  # six servers (three shards, a standby each) and the docs indexed
def test_the_shard_set_commands_run_twice_in_a_row(tmp_path: Path) -> None:
    section = block("### A shard set").strip()
    try:
        for _ in range(2):
            done = subprocess.run(
                ["bash", "-ec", section],
                cwd=ROOT,
                env=environment(RAGLOOM_INDEX=str(tmp_path / "unused.db")),
                capture_output=True,
                text=True,
                timeout=600,
            )
            assert done.returncode == 0, f"{section}\n{done.stdout}\n{done.stderr}"
            assert "Traceback" not in done.stderr and "shards" in done.stdout
    finally:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "ragloom.local_postgres",
                "stop",
                "/tmp/ragloom-shards",
                "--remove",
            ],
            capture_output=True,
            timeout=120,
        )


@pytest.mark.slow
@pytest.mark.parametrize("command", SLOW)
def test_eval_and_tune_examples_run_as_written(tmp_path: Path, command: str) -> None:
    shared_dataset("scifact")
    line = next(x for x in commands(block("## Command line")) if x.startswith(command))
    index = str(tmp_path / "ragloom.db")  # RAGLOOM_INDEX: documented; keeps the clone clean
    # embeds SciFact with the local model, then (tune) scores every trial on 809 queries:
    # minutes on two cores, more when the machine is shared; the bound only catches a hang
    done = run(line, ROOT, timeout=1800, RAGLOOM_INDEX=index)
    assert done.returncode == 0, done.stderr
    assert "nDCG@10" in done.stdout
