"""Open plus the first search (issue 48: under 1 s at 1M): `scale_worker serve`'s `first_s`
on its own, in fresh processes, each on a fresh copy of an index `scale_worker build` made.
Each process times opening the index (with the bench embedder's memory-mapped vector table),
`Index.warm()`, and the first hybrid search (`scale_worker.open_warm_first`).

Usage: python bench/scale_worker.py build DB N CACHE   (once)
       python bench/open_first.py DB N CACHE [--runs 6] [--python PY ...]
       (prints a table: min / median / max, s)

`--python` names the interpreters of the installs to compare (default: this one), whose
runs alternate: e.g. a venv with `pip install '.[dense]'` (the README's first command) beside
one with the test extra, whose pytrec-eval brings scipy (numba's BLAS check imports it when
the kernels load: python bench/kernel_load.py --without-scipy).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent
STEPS = ("open", "warm", "first hybrid search", "open + warm + first search")

PROBE = """
import json, sys
from pathlib import Path
from scale_data import Corpus
from scale_worker import open_warm_first
path, n, cache = Path(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
index, steps = open_warm_first(path, n, cache, Corpus())
print(json.dumps({"steps": [*steps, sum(steps)]}))
index.close()
"""


def fresh_copy(db: Path, folder: Path) -> Path:
    """The index's files (database, its WAL and shared memory, segment files) in `folder`."""
    for part in db.parent.glob(db.name + "*"):
        target = folder / part.name
        if part.is_dir():
            shutil.copytree(part, target)
        else:
            shutil.copy2(part, target)
    return folder / db.name


def one_run(python: str, db: Path, n: int, cache: Path) -> dict:
    with tempfile.TemporaryDirectory(prefix="open-first-") as folder:
        copy = fresh_copy(db, Path(folder))
        args = [python, "-c", PROBE, str(copy), str(n), str(cache)]
        out = subprocess.run(args, capture_output=True, text=True, check=True, cwd=BENCH)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("db", type=Path)
    parser.add_argument("n", type=int)
    parser.add_argument("cache", type=Path)
    parser.add_argument("--runs", type=int, default=6, help="processes an interpreter")
    parser.add_argument("--python", action="append", help="an interpreter (repeatable)")
    args = parser.parse_args()
    pythons = args.python or [sys.executable]
    runs: dict[str, list[dict]] = {python: [] for python in pythons}
    for _ in range(args.runs):  # (alternating: the machine's drift falls on every install)
        for python in pythons:
            runs[python].append(one_run(python, args.db.resolve(), args.n, args.cache.resolve()))
    for python in pythons:
        print(f"\n{python} (scipy installed: {has_scipy(python)})\n")
        print(f"| step ({args.runs} processes, {args.n:,} chunks) | min s | median s | max s |")
        print("|---|---|---|---|")
        for i, step in enumerate(STEPS):
            values = [run["steps"][i] for run in runs[python]]
            low, mid, high = min(values), statistics.median(values), max(values)
            print(f"| {step} | {low:.3f} | {mid:.3f} | {high:.3f} |")
        print("each run, s:", ", ".join(f"{run['steps'][-1]:.2f}" for run in runs[python]))


def has_scipy(python: str) -> bool:
    """Whether `python` can import scipy (numba's BLAS check then imports scipy.linalg)."""
    probe = "import importlib.util; print(importlib.util.find_spec('scipy') is not None)"
    found = subprocess.run([python, "-c", probe], capture_output=True, text=True, check=True)
    return found.stdout.strip() == "True"


if __name__ == "__main__":
    main()
