"""A hybrid query's legs one after the other vs beside each other (ragloom.engine.beside).

Usage: python bench/legs_beside.py INDEX [--queries 400] [--rounds 2]
       [--cache /tmp/ragloom-scale/cache]

INDEX is a settled bench/scale.py index (its size is read from its name, scale-N.db). One
read-only process, `RAGLOOM_PARALLEL_LEGS` 0 and 1 alternating query by query (the order
swapped every other query), hybrid queries of 8 words with their vectors at hand, unfiltered
and with a 1 % filter (side by side when it leaves at least 2,000 chunks, as at 1M; in line
below, as at 100k, where the row shows what deciding costs).
Prints p50 and p95 per mode and the ratio (above 1: beside is faster). The gain needs a free
core: on a machine whose other cores are busy both modes take the same time.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).parent))
from interleave import alternate, spread  # noqa: E402
from scale_data import BenchEmbedder, Corpus, hybrid_words, query_chunks  # noqa: E402

from ragloom import Index  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("index", type=Path)
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/ragloom-scale/cache"))
    args = parser.parse_args()
    found = re.search(r"scale-(\d+)\.db$", args.index.name)
    if not found:
        parser.error("INDEX must be a bench/scale.py index named scale-N.db")
    n = int(found.group(1))
    corpus = Corpus()
    table = corpus.vector_table(n + 100_000, args.cache)
    index = Index(args.index, embedder=BenchEmbedder(corpus, table=table), read_only=True)
    index.warm()
    texts = [hybrid_words(corpus.texts(q, 1)[0]) for q in query_chunks(n)]
    out = Table(title=f"{n:,} chunks: hybrid p50 / p95 ms, legs in line vs beside")
    for column in ("round", "filter", "in line", "beside", "in line / beside"):
        out.add_column(column)
    for round_ in range(args.rounds):
        for label, spec in (("none", None), ("1%", {"group": 7})):
            for text in texts:  # warm, and every query vector at hand
                index.search(text, top_k=10, filters=spec)

            def search(i: int, mode: str, spec=spec) -> None:
                os.environ["RAGLOOM_PARALLEL_LEGS"] = mode
                index.search(texts[i % len(texts)], top_k=10, filters=spec)

            line, beside = alternate(
                lambda i: search(i, "0"), lambda i: search(i, "1"), args.queries
            )
            out.add_row(
                str(round_),
                label,
                spread(line),
                spread(beside),
                f"{np.median(line) / np.median(beside):.2f}x",
            )
    index.close()
    Console(width=120).print(out)


if __name__ == "__main__":
    main()
