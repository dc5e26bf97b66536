"""Where a search's first use after open spends its extra time (issue 48): the 40 hybrid
queries of `bench/scale.py`'s mix (or their words searched lexically: `--mode lexical`),
three passes over one freshly opened index, after `Index.warm(wait=True)` (the common
terms' weights built: what is left is what the builder does not do). Per pass: p50 and total
wall time, the stages' sums from each result's timings, the process's minor page faults and
the growth of its anonymous memory; `--profile N`, the N functions of the searching thread
that cost most in each pass (their own time; a hybrid search's lexical leg may run on a
second thread, which this does not see).

Usage: python bench/scale_worker.py build DB N CACHE   (once)
       python bench/first_pass.py DB N CACHE [--mode lexical] [--no-wait] [--profile 14]

Open a copy of the built index each run (the opener resumes its background work). Prints a
table.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import resource
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
from scale_data import Corpus, hybrid_words, query_chunks
from scale_worker import _open


def anon_mb() -> float:
    """The process's resident anonymous memory (MB)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("RssAnon"):
                return int(line.split()[1]) / 1024
    return 0.0


def one_pass(index, texts: list[str], mode: str | None, profile: int) -> dict[str, float]:
    """One pass of the queries: wall times, stage sums, page faults, memory growth; with
    `profile`, this thread's `profile` costliest functions (their own time) printed."""
    stages: dict[str, float] = defaultdict(float)
    walls = []
    profiler = cProfile.Profile() if profile else None
    faults, memory = resource.getrusage(resource.RUSAGE_SELF).ru_minflt, anon_mb()
    for text in texts:
        started = time.perf_counter()
        if profiler is not None:
            profiler.enable()
        result = index.search(text, top_k=10, mode=mode)
        if profiler is not None:
            profiler.disable()
        walls.append((time.perf_counter() - started) * 1000)
        for stage, ms in (result.timings or {}).items():
            stages[stage] += ms
    if profiler is not None:
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(profile)
        print(out.getvalue().split("ncalls", 1)[-1].join(("ncalls", "")))
    return {
        "p50 ms": float(np.median(walls)),
        "total ms": float(np.sum(walls)),
        **{f"{stage} ms": value for stage, value in stages.items() if stage != "total"},
        "minor faults": resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults,
        "anon MB grown": anon_mb() - memory,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("db", type=Path)
    parser.add_argument("n", type=int)
    parser.add_argument("cache", type=Path)
    parser.add_argument("--mode", choices=("hybrid", "lexical"), default="hybrid")
    parser.add_argument("--no-wait", action="store_true", help="do not wait for the builder")
    parser.add_argument("--profile", type=int, default=0, help="print the N costliest functions")
    args = parser.parse_args()
    corpus = Corpus()
    texts = [hybrid_words(corpus.texts(q, 1)[0]) for q in query_chunks(args.n)]
    index = _open(args.db, corpus, args.cache, args.n)
    index.warm(wait=not args.no_wait)
    index.search(hybrid_words(corpus.texts(args.n + 500, 1)[0]), top_k=10)  # the first search
    mode = None if args.mode == "hybrid" else args.mode
    passes = [one_pass(index, texts, mode, args.profile) for _ in range(3)]
    keys = list(dict.fromkeys(k for p in passes for k in p))
    print(f"{args.mode} ({args.n:,} chunks), passes 1-3 after open")
    print(f"| {'':<16} | " + " | ".join(f"pass {i + 1:>2}" for i in range(3)) + " |")
    print("|" + "---|" * 4)
    for key in keys:
        cells = " | ".join(f"{p.get(key, 0.0):>7.1f}" for p in passes)
        print(f"| {key:<16} | {cells} |")
    index.close(finish=False)


if __name__ == "__main__":
    main()
