"""Scoring vectors against a query: `vectors @ query` (OpenBLAS's threaded gemv) against
`np.vecdot` (each row's dot product, single-threaded), the choice `ragloom.dense.cosine_search`
makes. Measured with every core free, then with one core kept busy by another process (a
shared machine, a server beside other work): a threaded product waits for a thread on the
busy core.

Usage: python bench/dense_scoring.py [--rows 220000] [--dim 384] [--repeats 5]

Prints min and median per call (microseconds) for the three shapes the dense leg scores: the
graph's ~120 candidates, a filtered segment's ~2,200 chunks (gathered from the segment), and
a whole segment.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import timeit

import numpy as np
from rich.console import Console
from rich.table import Table

SPIN = "while True: pass"


def _time(fn, number: int, repeats: int) -> tuple[float, float]:
    runs = sorted(t / number * 1e6 for t in timeit.repeat(fn, number=number, repeat=repeats))
    return runs[0], runs[len(runs) // 2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=220_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    segment = rng.standard_normal((args.rows, args.dim), dtype=np.float32)
    query = rng.standard_normal(args.dim, dtype=np.float32)
    shapes = {
        "120 graph candidates": (np.sort(rng.choice(args.rows, 120, replace=False)), 1000),
        "2,200 filtered chunks": (np.sort(rng.choice(args.rows, 2200, replace=False)), 100),
        f"whole segment ({args.rows:,})": (None, 5),
    }
    table = Table(title="dense scoring, us per call: min / median")
    for column in ("vectors", "load", "vectors @ query", "np.vecdot", "@ / vecdot (median)"):
        table.add_column(column)
    for load in ("cores free", "one core busy"):
        spinner = None
        if load == "one core busy":
            spinner = subprocess.Popen([sys.executable, "-c", SPIN])
        try:
            for label, (docs, number) in shapes.items():
                if docs is None:
                    matmul, vecdot = (lambda: segment @ query), (lambda: np.vecdot(segment, query))
                else:
                    matmul = lambda docs=docs: segment[docs] @ query  # noqa: E731
                    vecdot = lambda docs=docs: np.vecdot(segment[docs], query)  # noqa: E731
                a = _time(matmul, number, args.repeats)
                b = _time(vecdot, number, args.repeats)
                table.add_row(
                    label,
                    load,
                    f"{a[0]:,.1f} / {a[1]:,.1f}",
                    f"{b[0]:,.1f} / {b[1]:,.1f}",
                    f"{a[1] / b[1]:.2f}x",
                )
        finally:
            if spinner is not None:
                spinner.kill()
                spinner.wait()
    Console(width=120).print(table)


if __name__ == "__main__":
    main()
