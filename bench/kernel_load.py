"""What loading the compiled kernels costs a process (issue 48: open plus the first search at
1M): each step timed in a fresh process, as `Index.warm()` (or a long-lived process's first
large search) pays it from numba's cache. Steps: `import numba`; numba's array math, whose
BLAS check imports scipy.linalg (the first kernel a process loads pulls it in); the best-n
kernel (`dense.topn`, the first kernel, so numba's registries load with it); the dot-product
kernel (`dense.dots`); the lexical kernels (`lexical.kernels`). Run twice first so the cache
is written; the figures are of later runs. `--without-scipy` hides scipy from the probe, as
in an install that has none: ragloom's own extras do not pull it (the test extra's
pytrec-eval and the bench extra do), and numba's BLAS check then fails at once.

Usage: python bench/kernel_load.py [--runs 5] [--without-scipy]
       (prints a table: min / median / max, s)
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

STEPS = ("import numba", "array math (scipy.linalg)", "dense.topn", "dense.dots", "lexical")

HIDE_SCIPY = "import sys; sys.modules['scipy'] = None  # (import scipy... raises ImportError)\n"
PROBE = """
import json, time
marks = [time.perf_counter()]
import numba
marks.append(time.perf_counter())
from numba.np import arraymath
marks.append(time.perf_counter())
from ragloom.dense import dots, topn
from ragloom.lexical import kernels
start = time.perf_counter()
topn.compiled()
marks.append(time.perf_counter())
dots.compiled()
marks.append(time.perf_counter())
kernels.available()
marks.append(time.perf_counter())
steps = [b - a for a, b in zip(marks[:3], marks[1:3])]
steps += [marks[3] - start, marks[4] - marks[3], marks[5] - marks[4]]
print(json.dumps(steps))
"""


def one_run(without_scipy: bool) -> list[float]:
    """The steps' seconds in a fresh process."""
    probe = (HIDE_SCIPY if without_scipy else "") + PROBE
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--without-scipy", action="store_true")
    args = parser.parse_args()
    for _ in range(2):  # numba's cache written (a first run compiles: about 20 s)
        one_run(args.without_scipy)
    runs = [one_run(args.without_scipy) for _ in range(args.runs)]
    print(f"| step ({args.runs} processes) | min s | median s | max s |")
    print("|---|---|---|---|")
    rows = [(step, [run[i] for run in runs]) for i, step in enumerate(STEPS)]
    for step, values in [*rows, ("total", [sum(run) for run in runs])]:
        low, mid, high = min(values), statistics.median(values), max(values)
        print(f"| {step} | {low:.3f} | {mid:.3f} | {high:.3f} |")


if __name__ == "__main__":
    main()
