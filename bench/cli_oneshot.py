"""The one-shot command line (issue 48): `ragloom search` on a 100k-chunk index, one process per
question, as a shell alias, an editor plug-in or a git hook runs it. Whole-process wall time.

Usage: python bench/cli_oneshot.py [--work /tmp/ragloom-cli] [--size 100000] [--runs 10]
       [--no-model] [--build-only] [--tree CHECKOUT ...]

Builds once, and keeps in --work, the scale bench's synthetic corpus (bench/scale_data.py:
Zipf text of 20-89 words a chunk) of --size chunks as two indexes, as `ragloom index` leaves
them (settled: `optimize()`, then closed): BM25 only, and embedded by the local model
(all-MiniLM-L6-v2 int8; about 10 minutes at 100k on 2 cores; --no-model leaves it out).
Then it writes the package's bytecode (as `pip install` does), and each command runs once
untimed and --runs times timed, one after the other; the table gives the p50, p95 and fastest
wall time of the whole process (start to exit, as a shell sees it) beside what any Python
command with numpy costs here (`python -c "import numpy"`) and importing the command line
alone. With `--tree` (twice or more: a checkout before a change and after), each command runs
in each checkout in turn, and the table gives each one's p50. The same with a public tool,
for one row:
`hyperfine -w 1 -r 10 "ragloom --index WORK/lexical-100000.db search 'horu lujasi huvugo'"`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).parent))
from scale import ragloom_source  # noqa: E402
from scale_data import Corpus, hybrid_words, query_chunks, query_words  # noqa: E402

console = Console(width=140)
BATCH = 10_000
TARGETS = {"lexical": 0.5, "hybrid": 1.0}  # seconds, p50 (issue 48)


def build(path: Path, size: int, embedder: str) -> None:
    """The corpus as one index, settled and closed (what `ragloom index` leaves); kept."""
    done = path.with_suffix(".built")
    if done.exists():
        return
    from ragloom import Document, Index

    for stale in path.parent.glob(path.name + "*"):
        if stale.is_dir():
            for f in stale.iterdir():
                f.unlink()
            stale.rmdir()
        else:
            stale.unlink()
    corpus = Corpus()
    started = time.perf_counter()
    with Index(path, embedder=embedder) as index:
        index.configure(chunking={"max_chars": 4000, "overlap": 0, "min_chars": 0})
        for lo in range(0, size, BATCH):
            texts = corpus.texts(lo, min(BATCH, size - lo))
            index.add(
                [
                    Document(f"d{lo + i}", t, metadata=corpus.metadata(lo + i))
                    for i, t in enumerate(texts)
                ]
            )
            console.print(f"  {path.name}: {lo + len(texts):,} chunks", highlight=False)
        index.optimize()
    done.write_text(f"{size} chunks in {time.perf_counter() - started:.0f} s\n")


def precompile(package: Path) -> None:
    """Write a package's bytecode first, as `pip install` does. Otherwise a checkout that was
    never imported, or one run under PYTHONDONTWRITEBYTECODE, times Python's compiler on
    every run (0.2 s here) instead of the command."""
    import compileall

    if not compileall.compile_dir(package, quiet=1):
        raise SystemExit(f"could not compile {package}'s bytecode")


def walls(command: list[str], runs: int, envs: list[dict[str, str]]) -> list[list[float]]:
    """Wall seconds of `command` as a whole process in each environment, `runs` times after
    one untimed run, the environments taking turns (the host's noise falls on each alike)."""
    times: list[list[float]] = [[] for _ in envs]
    for i in range(runs + 1):
        for env, kept in zip(envs, times):
            started = time.perf_counter()
            done = subprocess.run(command, capture_output=True, text=True, env=env)
            took = time.perf_counter() - started
            if done.returncode:
                raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}")
            if i:
                kept.append(took)
    return times


def tree_name(tree: Path) -> str:
    """A checkout's commit (with `+` when its files differ from it), or its folder's name."""
    done = subprocess.run(
        ["git", "-C", str(tree), "describe", "--always", "--dirty=+"],
        capture_output=True,
        text=True,
    )
    return done.stdout.strip() or tree.name


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--work", type=Path, default=Path("/tmp/ragloom-cli"))
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--no-model", action="store_true")
    parser.add_argument("--build-only", action="store_true", help="build the indexes, time nothing")
    parser.add_argument(
        "--tree",
        type=Path,
        action="append",
        help="a checkout to time (repeatable: their runs take turns), imported from its src/",
    )
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    console.print(f"ragloom: {ragloom_source()}", highlight=False)
    lexical = args.work / f"lexical-{args.size}.db"
    model = args.work / f"local-{args.size}.db"
    build(lexical, args.size, "none")
    if not args.no_model:
        build(model, args.size, "local")
    if args.build_only:
        return

    env = {k: v for k, v in os.environ.items() if k not in ("RAGLOOM_EMBEDDER", "RAGLOOM_KERNELS")}
    if args.tree:
        trees = [tree.resolve() for tree in args.tree]
        names = [tree_name(tree) for tree in trees]
        envs = [{**env, "PYTHONPATH": str(tree / "src")} for tree in trees]
        packages = [tree / "src" / "ragloom" for tree in trees]
    else:
        import ragloom

        names, envs, packages = ["p50"], [env], [Path(ragloom.__file__).parent]
    for package in packages:
        precompile(package)
    corpus = Corpus()
    words = query_words(corpus)
    hybrid = hybrid_words(corpus.texts(query_chunks(args.size)[0], 1)[0])
    python = [sys.executable]
    ragloom = [*python, "-m", "ragloom", "--index"]
    rows: list[tuple[str, str | None, list[str]]] = [
        ("python -c 'import numpy' (a floor)", None, [*python, "-c", "import numpy"]),
        ("import ragloom.cli.app", None, [*python, "-c", "import ragloom.cli.app"]),
    ]
    for kind in ("common", "rare", "very common"):
        query = " ".join(words[kind])
        rows.append(
            (f"lexical, {kind} terms", "lexical", [*ragloom, str(lexical), "search", query])
        )
    if not args.no_model:
        query = " ".join(words["common"])
        rows.append(
            (
                "lexical on the model's index (--mode lexical)",
                "lexical",
                [*ragloom, str(model), "search", query, "--mode", "lexical"],
            )
        )
        rows.append(("hybrid, local model", "hybrid", [*ragloom, str(model), "search", hybrid]))
    table = Table(
        title=f"ragloom search, one process per question, {args.size:,} chunks "
        f"(wall s over {args.runs} runs)"
    )
    figures = ("p50", "p95", "fastest") if len(envs) == 1 else [f"{n} p50" for n in names]
    for column in ("command", *figures, "target (p50)"):
        table.add_column(column, justify="left" if column == "command" else "right")
    for name, target, command in rows:
        goal = "" if target is None else f"< {TARGETS[target]:.1f}"
        times = [sorted(t) for t in walls(command, args.runs, envs)]
        if len(times) > 1:
            table.add_row(name, *(f"{statistics.median(t):.3f}" for t in times), goal)
            continue
        (one,) = times
        p95 = one[min(len(one) - 1, round(0.95 * (len(one) - 1)))]
        table.add_row(name, f"{statistics.median(one):.3f}", f"{p95:.3f}", f"{one[0]:.3f}", goal)
    console.print(table)


if __name__ == "__main__":
    main()
