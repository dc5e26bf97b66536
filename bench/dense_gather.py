"""Scoring scattered rows of a segment's vectors, as a filtered dense leg does: numpy
gathering the rows first (`np.take`, then `np.vecdot`: what `ragloom.dense.dots` does without
numba), ragloom's compiled kernel reading them in place (`dots.row_dots`), and faiss's own
`fvec_inner_products_by_idx` beside them as the peer.

Usage: python bench/dense_gather.py [--rows 100000] [--dim 384] [--repeats 20]

Two states for each count of rows: "in cache" scores one set of rows again and again (a
filter that every query repeats); "scattered" scores a new set each time, as a segment's
vectors mostly are: out of cache. Prints the median per call in microseconds.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from rich.console import Console
from rich.table import Table

from ragloom.dense import dots


def _median_us(score, sets: list[np.ndarray], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        for docs in sets:
            start = time.perf_counter()
            score(docs)
            times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    if not dots.compiled():
        raise SystemExit("the compiled kernel is not available (numba missing or switched off)")
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((args.rows, args.dim), dtype=np.float32)
    query = rng.standard_normal(args.dim, dtype=np.float32)
    ways = {
        "numpy take + vecdot": lambda docs: np.vecdot(np.take(vectors, docs, axis=0), query),
        "ragloom row_dots": lambda docs: dots.row_dots(vectors, docs, query),
    }
    try:
        import faiss

        def by_index(docs: np.ndarray) -> np.ndarray:
            out = np.empty(len(docs), np.float32)
            faiss.fvec_inner_products_by_idx(
                faiss.swig_ptr(out),
                faiss.swig_ptr(query),
                faiss.swig_ptr(vectors),
                faiss.swig_ptr(docs),
                args.dim,
                1,
                len(docs),
            )
            return out

        ways["faiss by_idx"] = by_index
    except ImportError:
        pass
    table = Table(title=f"scoring chosen rows of {args.rows:,} x {args.dim}: us per call (median)")
    for column in ("rows", "state", *ways, "numpy / ragloom"):
        table.add_column(column, justify="right")
    for count in (50, 1_000, 10_000):
        for state in ("in cache", "scattered"):
            draws = 1 if state == "in cache" else 40
            sets = [
                np.sort(rng.choice(args.rows, count, replace=False)).astype(np.int64)
                for _ in range(draws)
            ] * (40 if state == "in cache" else 1)
            medians = {name: _median_us(way, sets, args.repeats) for name, way in ways.items()}
            ratio = medians["numpy take + vecdot"] / medians["ragloom row_dots"]
            cells = [f"{medians[name]:,.1f}" for name in ways]
            table.add_row(f"{count:,}", state, *cells, f"{ratio:.2f}x")
    Console(width=120).print(table)


if __name__ == "__main__":
    main()
