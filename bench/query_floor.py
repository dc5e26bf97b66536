"""Where a plain lexical query's time goes, beside embedded Qdrant in the same process: the
fixed cost (a word no chunk holds), the rare-term query bench/scale.py sends, and the same
query through the barest route ragloom's own pieces allow (snapshot, query analysis, the
view's BM25 kernel, the hits' rows from SQLite; no candidates, fusion, controls, timer or
result objects). The bare route is a measurement, not a search path: what the layers above
the kernels and the store cost is the difference.

Usage: python bench/query_floor.py WORK [--n 100000] [--queries 2000] [--rounds 3]

WORK is a bench/scale.py work folder with a settled index (`scale-N.db`, opened read-only)
and the Qdrant shard of the same run (`qdrant-N`). The ways alternate in blocks of 200
queries. Prints p50 ms per way and round. Qdrant runs a query on worker threads, so on a
2-vCPU machine it pays for waking the other vCPU: `taskset -c 0 python bench/query_floor.py`
shows it at its best (ragloom's lexical path runs on the calling thread either way).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).parent))
from qdrant_interleaved import NO_MATCH, check_no_match, open_run  # noqa: E402
from scale_data import query_words  # noqa: E402
from scale_qdrant import bm25_model, lexical_request  # noqa: E402

from ragloom import Index  # noqa: E402
from ragloom.engine.keywords import search_options  # noqa: E402
from ragloom.store.base import LexicalQuery  # noqa: E402
from ragloom.text import analyzer_for  # noqa: E402

BLOCK = 200


def bare_route(index: Index, query: str, with_text: bool) -> Callable[[], object]:
    """The query through ragloom's pieces with nothing between them: the rows and scores
    the view's kernel ranks (and their stored chunks, `with_text`)."""
    store = index.store
    with store.snapshot() as snap:
        reader = snap.collection("default")
        analyzer = analyzer_for(reader.config.tokenizer)
        bm25 = search_options(10, mode="lexical").bm25_for(reader.config.bm25)

    def run() -> object:
        with store.snapshot() as snap:
            asked = LexicalQuery(analyzer.terms(query), bm25)
            rows, scores = snap.collection("default").lexical(asked, 10)
            if not with_text:
                return rows.tolist(), scores.tolist()
            rows = rows.tolist()
            chunks = snap.chunks(rows)
            return [(chunks[r], s) for r, s in zip(rows, scores.tolist())]

    return run


def ways(index: Index, shard, model, rare: str) -> dict[str, Callable[[], object]]:
    """Each way of answering, by name (text: hits with their text and metadata)."""
    lexical = search_options(10, mode="lexical")
    out: dict[str, Callable[[], object]] = {}
    for label, query in (("no match", NO_MATCH), ("rare", rare)):
        out[f"{label}, text: Index.search"] = lambda q=query: index.search(
            q, top_k=10, mode="lexical"
        )
        out[f"{label}, ids: Index.rank"] = lambda q=query: index.rank(q, lexical)
        out[f"{label}, text: bare route"] = bare_route(index, query, True)
        out[f"{label}, ids: bare route"] = bare_route(index, query, False)
        out[f"{label}, text: Qdrant"] = lambda q=query: shard.query(
            lexical_request(model, q, None, True)
        )
        out[f"{label}, ids: Qdrant"] = lambda q=query: shard.query(
            lexical_request(model, q, None, False)
        )
    return out


def check(index: Index, rare: str) -> None:
    """The bare route ranks the rows `Index.rank` does (else the comparison means nothing)."""
    ranked = [c.row_id for c in index.rank(rare, search_options(10, mode="lexical")).candidates]
    rows, _ = bare_route(index, rare, False)()  # type: ignore[misc]
    assert rows == ranked[: len(rows)] and rows, (rows, ranked)


def timed_blocks(runs: dict[str, Callable[[], object]], queries: int) -> dict[str, list[float]]:
    """Milliseconds of each way, `queries` each, the ways taking turns in blocks."""
    times: dict[str, list[float]] = {name: [] for name in runs}
    order = list(runs.items())
    for turn in range(0, queries, BLOCK):
        for name, run in order if (turn // BLOCK) % 2 else order[::-1]:
            for _ in range(BLOCK):
                started = time.perf_counter()
                run()
                times[name].append((time.perf_counter() - started) * 1000)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("work", type=Path)
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=2_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    corpus, _, index, shard = open_run(args.work, args.n)
    rare = " ".join(query_words(corpus)["rare"])
    model = bm25_model()
    check(index, rare)
    check_no_match(index, shard, model)
    runs = ways(index, shard, model, rare)
    for run in runs.values():  # warm every way
        for _ in range(100):
            run()
    rounds = [timed_blocks(runs, args.queries) for _ in range(args.rounds)]
    out = Table(title=f"{args.n:,} chunks, lexical top 10: p50 ms per round")
    out.add_column("query, answer: way")
    for r in range(args.rounds):
        out.add_column(f"round {r}", justify="right")
    for name in runs:
        out.add_row(name, *(f"{np.median(times[name]):.3f}" for times in rounds))
    shard.close()
    index.close()
    Console(width=120).print(out)


if __name__ == "__main__":
    main()
