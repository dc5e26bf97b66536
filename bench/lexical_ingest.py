"""Lexical-only ingest speed (issue 15): ragloom against bm25s on the same synthetic texts.

Usage: flock /tmp/ragloom-bench.lock python bench/lexical_ingest.py [--chunks 100000]
       [--repeats 5] [--work /tmp/ragloom-lexical-ingest]

Each repeat runs, in fresh child processes one after the other, ragloom's `Index.add` with
`embedder=None` into a new SQLite index (bench/scale_worker.py `build-lexical`: 10,000
documents a call, one chunk each, 20-89 Zipf words) and bm25s tokenizing and indexing the
same texts in memory (`build-bm25s`: the same stop words and stemmer, k1=0.9, b=0.4). Only
the indexing is timed, not generating the texts. Alternating the two and taking medians
keeps the ratio meaningful on a shared, noisy machine. Prints a table.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

WORKER = Path(__file__).parent / "scale_worker.py"


def run(role: str, path: Path, n: int) -> dict:
    done = subprocess.run(
        [sys.executable, str(WORKER), role, str(path), str(n), str(path.parent)],
        capture_output=True,
        text=True,
    )
    if done.returncode:
        raise SystemExit(f"{role} failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--work", type=Path, default=Path("/tmp/ragloom-lexical-ingest"))
    args = parser.parse_args()
    ours, theirs = [], []
    version = ""
    for _ in range(args.repeats):
        shutil.rmtree(args.work, ignore_errors=True)
        args.work.mkdir(parents=True)
        built = run("build-lexical", args.work / "lexical.db", args.chunks)
        ours.append(built["add_chunks_per_s"])
        peer = run("build-bm25s", args.work / "unused.db", args.chunks)
        theirs.append(peer["chunks_per_s"])
        version = peer["version"]
    shutil.rmtree(args.work, ignore_errors=True)
    table = Table(
        title=f"lexical-only ingest, {args.chunks:,} chunks, {args.repeats} alternating runs"
    )
    for col in ("system", "median chunks/s", "min", "max"):
        table.add_column(col, justify="right")
    for name, rates in (("ragloom (SQLite file)", ours), (f"bm25s {version} (memory)", theirs)):
        table.add_row(
            name,
            f"{statistics.median(rates):,.0f}",
            f"{min(rates):,.0f}",
            f"{max(rates):,.0f}",
        )
    console = Console(width=120)
    console.print("embedder: none (lexical only, set explicitly); one thread each")
    console.print(table)
    ratio = statistics.median(ours) / statistics.median(theirs)
    console.print(f"ragloom / bm25s (medians): {ratio:.2f}x the speed")


if __name__ == "__main__":
    main()
