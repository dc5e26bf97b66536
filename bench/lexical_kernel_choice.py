"""Which pruning kernel a lexical query's large segments go to, measured: block-max MaxScore
always tried first (ragloom before this choice), block-max windows only, and the default
choice (`ragloom.lexical.topk.MAXSCORE_WALKED`: MaxScore only when nearly all the query's
postings are of very common terms, read by chunk number). All three return the same chunks
and scores (tests/test_kernels_pruned.py); only their time differs.

Usage: python bench/lexical_kernel_choice.py INDEX [--n N] [--rounds 2]

INDEX is a settled bench/scale.py index (scale-N.db; any other name needs --n), opened
read-only. Queries: bench/scale.py's (the first 8 words of 40 unseen chunks, as its hybrid
queries send to the lexical leg, at depth 40 as a hybrid search asks and at 10; its very
common, common and rare terms at 10), ids and scores only (`Index.rank`). The three ways
take turns query by query, the order rotated each query, so load that comes and goes falls
on all alike. Prints p50 / p95 ms, and each way's p50 over the default's (above 1: slower
than the default).
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).parent))
from interleave import spread  # noqa: E402
from scale_data import Corpus, hybrid_words, query_chunks, query_words  # noqa: E402

from ragloom import Index  # noqa: E402
from ragloom.engine.keywords import search_options  # noqa: E402
from ragloom.lexical import topk  # noqa: E402

WAYS = {  # name -> (MAXSCORE_SHARE, MAXSCORE_WALKED)
    "MaxScore first": (topk.MAXSCORE_SHARE, 0),
    "windows only": (0, 0),
    "default": (topk.MAXSCORE_SHARE, topk.MAXSCORE_WALKED),
}


def use(way: str) -> None:
    topk.MAXSCORE_SHARE, topk.MAXSCORE_WALKED = WAYS[way]


def rotated(index: Index, queries: list[str], depth: int, repeats: int) -> dict[str, np.ndarray]:
    """Milliseconds of each way for every query, `repeats` times, the ways in rotated order."""
    options = search_options(depth, mode="lexical")
    names = list(WAYS)
    times: dict[str, list[float]] = {name: [] for name in names}
    for name in names:  # warm each way's caches once
        use(name)
        for query in queries:
            index.rank(query, options)
    turn = 0
    for _ in range(repeats):
        for query in queries:
            turn += 1
            for name in names[turn % len(names) :] + names[: turn % len(names)]:
                use(name)
                started = time.perf_counter()
                index.rank(query, options)
                times[name].append((time.perf_counter() - started) * 1000)
    use("default")
    return {name: np.array(ms) for name, ms in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("index", type=Path)
    parser.add_argument("--n", type=int, help="chunks in INDEX (read from scale-N.db)")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    found = re.search(r"scale-(\d+)\.db$", args.index.name)
    if args.n is None and not found:
        parser.error("INDEX is not named scale-N.db: give its size with --n")
    n = args.n if args.n is not None else int(found.group(1))  # type: ignore[union-attr]
    corpus = Corpus()
    index = Index(args.index, embedder=None, read_only=True)
    index.warm()
    held = index.stats()["collections"]["default"]["segments"]
    segments = f"{held['files']} segment files, {held['memory']} in memory"
    hybrid = [hybrid_words(corpus.texts(q, 1)[0]) for q in query_chunks(n)]
    kinds = [
        ("hybrid's lexical leg, depth 40", hybrid, 40, 5),
        ("hybrid's words, depth 10", hybrid, 10, 5),
    ]
    for label, terms in query_words(corpus).items():
        kinds.append((f"{label} terms, depth 10", [" ".join(terms)], 10, 200))
    out = Table(
        title=f"{n:,} chunks ({segments}): lexical ids and scores, p50 / p95 ms; "
        "(x: p50 over the default's)"
    )
    for column in ("round", "query", *WAYS):
        out.add_column(column)
    for round_ in range(args.rounds):
        for label, queries, depth, repeats in kinds:
            times = rotated(index, queries, depth, repeats)
            base = np.median(times["default"])
            cells = [
                f"{spread(ms)}" + ("" if name == "default" else f" ({np.median(ms) / base:.2f}x)")
                for name, ms in times.items()
            ]
            out.add_row(str(round_), label, *cells)
    index.close()
    Console(width=140).print(out)


if __name__ == "__main__":
    main()
