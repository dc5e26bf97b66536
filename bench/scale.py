"""Scale benchmark (issues 14, 18, 23 and 48): build, size, open, query and write at 10k-1M
chunks.

Usage: python bench/scale.py [--sizes 10000 100000 1000000] [--work /tmp/ragloom-scale]
       [--cache /tmp/ragloom-cache] [--peers qdrant bm25s fts5 numpy] [--passes 3]
       [--hand-on]

Chunks are synthetic (bench/scale_data.py: Zipf words, 20-89 a chunk; clustered 384-d
vectors) and embedded by a trivial table lookup, so the figures measure ragloom (build times
count the indexing calls, not generating the texts). Each phase runs in its own process
(peak memory is per phase). ragloom is measured as users get it: built with Index.add and
closed without optimize() (close finishes the work the writes made due; `--hand-on` closes
with finish=False, leaving it to the next opener), then reopened; searched at once, and
again once any background work the opener resumed (flushes, merges, graphs) is done. In the
same run, the peers:
embedded Qdrant (qdrant-edge-py: BM25 sparse vectors, HNSW, payload filters; optimized, its
steady state; warmed by one untimed pass of the query mix, as ragloom's settled figures come
after its at-open pass) for every query kind, its hits carrying their text and metadata as
ragloom's do, then again with ids and scores only beside ragloom's `Index.rank` (a second
table); on both sides the exact searches for dense recall run after each timed loop (between
queries they would evict the caches the next query reads), SQLite FTS5 over the same
texts, bm25s indexing and searching the same texts (lexical queries), and exact numpy search
over the same vectors; `--peers` picks some of them. Settled ragloom, Qdrant and bm25s are
timed over `--passes` passes of the query mix (each kind's p50 over all of them: one pass of
40 queries moved by up to 2x with a moment's noise). Settled hybrid queries find their
vectors remembered from the earlier passes, which lets their legs run side by side; every
question at open is new, its lexical leg in line while a local model would embed it, so the
row "hybrid, a new question" gives the settled figure of the same queries with each vector
forgotten first, the one their at-open figure compares with. Prints tables.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).parent))
from scale_data import PASSES, Corpus, query_chunks, query_words  # noqa: E402
from scale_peers import build_fts5, exact_topk, fts5_query  # noqa: E402

console = Console(width=160)
PEERS = ("qdrant", "bm25s", "fts5", "numpy")


def run(
    role: str, path: Path, n: int, cache: Path, passes: int = PASSES, close: str = "finish"
) -> dict:
    worker = Path(__file__).parent / "scale_worker.py"
    done = subprocess.run(
        [sys.executable, str(worker), role, str(path), str(n), str(cache), str(passes), close],
        capture_output=True,
        text=True,
        env={"RAGLOOM_EMBEDDER": "none", **__import__("os").environ},
    )
    if done.returncode:
        raise SystemExit(f"{role} failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def ragloom_source() -> str:
    """Which ragloom this run measures: the package's folder and its git commit. The workers
    import it as this process does, so an environment installed from another checkout is
    measured instead of the one the command runs from: say which."""
    import ragloom

    where = Path(ragloom.__file__).resolve().parent

    def git(*args: str) -> str | None:
        done = subprocess.run(["git", "-C", str(where), *args], capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else None

    commit = git("rev-parse", "--short", "HEAD")
    if commit is None:
        return f"{where} (not in a git checkout)"
    changed = git("status", "--porcelain", "--", ".")
    return f"{where} at {commit}" + (", with uncommitted changes" if changed else "")


def sizes_on_disk(path: Path, n: int) -> dict[str, float]:
    """Bytes per chunk: SQLite tables and indexes, the live segment files and graphs, and
    (apart from the total) files of segments retired by a merge, which the store removes
    once no reader maps them."""
    out: dict[str, float] = {}
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    for name, size in conn.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name"):
        out[f"sqlite {name}"] = size / n
    live = {name for (name,) in conn.execute("SELECT name FROM segments WHERE retired IS NULL")}
    conn.close()
    folder = path.with_name(path.name + "-segments")
    files = list(folder.iterdir()) if folder.exists() else []
    for suffix, label in ((".seg", "segment files"), (".hnsw", "graph files")):
        mine = [f for f in files if f.suffix == suffix and f.stem in live]
        out[label] = sum(f.stat().st_blocks * 512 for f in mine) / n
    wal = path.with_name(path.name + "-wal")
    out["sqlite wal"] = (wal.stat().st_size if wal.exists() else 0) / n
    out["total"] = sum(out.values())
    stale = [f for f in files if f.stem not in live]
    out["retired files, removed later (not in total)"] = (
        sum(f.stat().st_blocks * 512 for f in stale) / n
    )
    return out


def peers(corpus: Corpus, n: int, work: Path, cache: Path, which: set[str]) -> dict:
    """FTS5 and exact numpy latencies on the same data and queries as `serve` (those of
    them in `which`)."""
    out: dict = {}
    if "fts5" in which:
        fts = build_fts5(corpus, n, work / f"fts-{n}.db")
        conn = sqlite3.connect(work / f"fts-{n}.db")
        words = query_words(corpus)
        where = {"none": None, "1%": ("grp", 7), "0.1%": ("shard", 123)}
        out.update({"fts5 build_s": fts["build_s"], "fts5 bytes/chunk": fts["bytes"] / n})
        for fname, cond in where.items():
            for label, terms in words.items():
                times = []
                for _ in range(20):
                    started = time.perf_counter()
                    fts5_query(conn, terms, cond)
                    times.append((time.perf_counter() - started) * 1000)
                out[f"fts5 {label} {fname}"] = times
    if "numpy" in which:
        table = corpus.vector_table(n + 100_000, cache)
        matrix = np.ascontiguousarray(table[:n])
        rows = np.arange(n)
        masks = {"none": None, "1%": rows % 100 == 7, "0.1%": (rows * 7919) % 1000 == 123}
        for fname, mask in masks.items():
            times = []
            for q in query_chunks(n, 20):
                started = time.perf_counter()
                exact_topk(matrix, table[q], 10, mask)
                times.append((time.perf_counter() - started) * 1000)
            out[f"numpy {fname}"] = times
    return out


def remove_index(path: Path) -> None:
    """An index file with its WAL, shared memory and segments folder."""
    for leftover in path.parent.glob(f"{path.name}*"):
        if leftover.is_dir():
            for f in leftover.iterdir():
                f.unlink()
            leftover.rmdir()
        else:
            leftover.unlink()


def _p(values: list[float], q: float) -> str:
    value = np.percentile(values, q)
    return f"{value:.2f}" if value < 1 else f"{value:.1f}"


def _ratio(theirs: list[float], ours: list[float]) -> str:
    return f"{np.percentile(theirs, 50) / max(np.percentile(ours, 50), 1e-9):.2f}x"


def _fastest_bm25s(bm25s: dict, key: str) -> tuple[str, list[float]] | None:
    """bm25s's faster backend for a lexical query kind (its name and latencies)."""
    found = [(b, bm25s[f"{b} {key}"]) for b in ("numba", "numpy") if f"{b} {key}" in bm25s]
    return min(found, key=lambda f: np.percentile(f[1], 50)) if found else None


def report(
    n: int,
    build: dict,
    lexical: dict,
    disk: dict,
    serve: dict,
    writes: dict,
    peer: dict,
    qdrant: dict | None,
) -> None:
    opened = serve["at_open"]
    bm25s = lexical.get("bm25s")
    table = Table(
        title=f"{n:,} chunks, built with Index.add, closed, reopened (never optimized by hand): "
        f"queries, ms p50 / p95 (settled: {len(serve['dense none'])} queries a kind); "
        "ratio = peer p50 / ragloom p50 (above 1: ragloom faster)"
    )
    columns = ["query", "filter", "ragloom at open", "ragloom settled"]
    if qdrant:
        columns += [f"Qdrant Edge {qdrant['build']['version']}", "Qdrant / ragloom"]
    if bm25s:
        columns += [f"bm25s {bm25s['version']} (lexical)", "bm25s / ragloom"]
    if peer:
        columns += ["FTS5 or numpy", "that / ragloom"]
    for column in columns:
        table.add_column(column)
    peer_q = qdrant["serve"] if qdrant else {}

    def row(name: str, fname: str, key: str, opened_cell: str, settled_cell: str, other) -> None:
        ours = serve[key]
        cells = [name, fname, opened_cell, settled_cell]
        if qdrant and key not in peer_q:  # (a row of ragloom's alone)
            cells += ["", ""]
        elif qdrant:
            theirs = peer_q[key]
            cells += [f"{_p(theirs, 50)} / {_p(theirs, 95)}", _ratio(theirs, ours)]
            if key.startswith("dense"):
                cells[-2] += f" (r {peer_q[key.replace('dense', 'dense recall')]:.3f})"
        if bm25s:
            best = _fastest_bm25s(bm25s, key)
            cells += (
                [f"{_p(best[1], 50)} / {_p(best[1], 95)} ({best[0]})", _ratio(best[1], ours)]
                if best
                else ["", ""]
            )
        if peer:
            cells += (
                [f"{other[0]} {_p(other[1], 50)}", _ratio(other[1], ours)] if other else ["", ""]
            )
        table.add_row(*cells)

    for fname in ("none", "1%", "0.1%"):
        for label in ("very common", "common", "rare"):
            key = f"lexical {label} {fname}"
            ours = serve[key]
            fts = (
                ("FTS5", peer[f"fts5 {label} {fname}"]) if "fts5 very common none" in peer else None
            )
            row(
                f"lexical {label}",
                fname,
                key,
                _p(opened[key], 50),
                f"{_p(ours, 50)} / {_p(ours, 95)}",
                fts,
            )
        key, recall = f"dense {fname}", f"dense recall {fname}"
        ours = serve[key]
        row(
            "dense",
            fname,
            key,
            f"{_p(opened[key], 50)} (r {opened[recall]:.3f})",
            f"{_p(ours, 50)} / {_p(ours, 95)} (r {serve[recall]:.3f})",
            ("numpy", peer[f"numpy {fname}"]) if f"numpy {fname}" in peer else None,
        )
        key = f"hybrid {fname}"
        row(
            "hybrid",
            fname,
            key,
            _p(opened[key], 50),
            f"{_p(serve[key], 50)} / {_p(serve[key], 95)}",
            None,
        )
        new = f"{key} new question"  # settled, each vector forgotten first: as at open
        if new in serve:
            cell = f"{_p(serve[new], 50)} / {_p(serve[new], 95)}"
            row("hybrid, a new question", fname, new, _p(opened[key], 50), cell, None)
    console.print(table)
    console.print(
        "r: dense recall@10 against exact search with the same filter. Hits carry their text "
        "and metadata on both sides (ragloom's Index.search; Qdrant with its payload)"
    )
    if qdrant:
        ids_only(n, serve, peer_q)
    facts = Table(title=f"{n:,} chunks: build, open, memory, writes")
    facts.add_column("what")
    facts.add_column("figure")
    facts.add_row("Index.add", f"{build['add_s']:.1f} s, {build['add_chunks_per_s']:,.0f} chunks/s")
    facts.add_row("per 100k", ", ".join(f"{p['chunks_per_s']:,.0f}" for p in build["per_100k"]))
    facts.add_row(
        "Index.add, lexical only (embedder=None)",
        f"{lexical['add_s']:.1f} s, {lexical['add_chunks_per_s']:,.0f} chunks/s; per 100k "
        + ", ".join(f"{p['chunks_per_s']:,.0f}" for p in lexical["per_100k"]),
    )
    peer_lexical = lexical.get("bm25s")
    if peer_lexical:
        facts.add_row(
            f"bm25s {peer_lexical['version']} tokenize + index, same texts (memory only)",
            f"{peer_lexical['build_s']:.1f} s, {peer_lexical['chunks_per_s']:,.0f} chunks/s; "
            f"ragloom lexical-only / bm25s: "
            f"{lexical['add_chunks_per_s'] / peer_lexical['chunks_per_s']:.2f}x the speed",
        )
    if qdrant:
        qb = qdrant["build"]
        facts.add_row(
            f"Qdrant Edge {qb['version']} upserts (BM25 sparse + dense + payload), then optimize()",
            f"{qb['upsert_s']:.1f} s ({qb['chunks_per_s']:,.0f} chunks/s) + optimize "
            f"{qb['optimize_s']:.1f} s, {qb['segments']} segments; open {peer_q['open_s']:.2f} s",
        )
    facts.add_row(
        "segments before close (no optimize)",
        f"{build['segments']}; after close {build['segments_after_close']}",
    )
    facts.add_row(
        "close: the work the writes made due, finished"
        if build["finish"]
        else "close(finish=False): the work handed on (--hand-on)",
        f"{build['close_s']:.1f} s, {len(build['close_steps'])} step(s): "
        + "; ".join(build["close_steps"][:6])
        + (" ..." if len(build["close_steps"]) > 6 else ""),
    )
    facts.add_row(
        "build to the steady state: Index.add + close",
        f"{build['add_s'] + build['close_s']:.1f} s "
        f"({n / (build['add_s'] + build['close_s']):,.0f} chunks/s)",
    )
    facts.add_row(
        "reopened: pending work found, resumed in the background",
        f"{len(opened['pending work'])} step(s): {'; '.join(opened['pending work'][:4])}"
        f"{' ...' if len(opened['pending work']) > 4 else ''}",
    )
    facts.add_row(
        "reopened: steady state reached after (open included)",
        f"{serve['settled_s']:.1f} s; segments then {serve['segments']}",
    )
    facts.add_row(
        "peak RSS building",
        f"{build['peak_mb']:.0f} MB: anonymous at most {build['peak_anon_mb']:.0f} MB, "
        f"pages of memory-mapped files at most {build['peak_file_mb']:.0f} MB",
    )
    if "fts5 build_s" in peer:
        facts.add_row(
            "FTS5 build", f"{peer['fts5 build_s']:.1f} s, {peer['fts5 bytes/chunk']:.0f} B/chunk"
        )
    facts.add_row(
        "open + warm; with the first (hybrid) search",
        f"{serve['open_s']:.2f} s; {serve['first_s']:.2f} s",
    )
    facts.add_row(
        "serving RSS",
        f"peak {serve['peak_mb']:.0f} MB, anonymous {serve['anon_mb']:.0f} MB, "
        f"mapped files {serve['file_mb']:.0f} MB",
    )
    for name in ("add", "replace", "delete"):
        w = writes[name]
        facts.add_row(
            f"one-document {name} (ms)", f"p50 {_p(w, 50)}, p95 {_p(w, 95)}, max {max(w):.1f}"
        )
    for name, value in disk.items():
        facts.add_row(f"bytes/chunk: {name}", f"{value:,.0f}")
    console.print(facts)


def ids_only(n: int, serve: dict, peer_q: dict) -> None:
    """The settled query mix answered with ids and scores only: ragloom's `Index.rank` (no
    chunk text read) beside Qdrant asked for no payload."""
    table = Table(
        title=f"{n:,} chunks, settled, ids and scores only: ms p50 / p95; ratio = Qdrant p50 / "
        "ragloom p50"
    )
    for column in ("query", "filter", "ragloom Index.rank", "Qdrant, no payload", "ratio"):
        table.add_column(column)
    for fname in ("none", "1%", "0.1%"):
        for kind in ("lexical very common", "lexical common", "lexical rare", "dense", "hybrid"):
            key = f"{kind} {fname} ids"
            ours, theirs = serve.get(key), peer_q.get(key)
            if ours and theirs:
                table.add_row(
                    kind,
                    fname,
                    f"{_p(ours, 50)} / {_p(ours, 95)}",
                    f"{_p(theirs, 50)} / {_p(theirs, 95)}",
                    _ratio(theirs, ours),
                )
    console.print(table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", nargs="+", type=int, default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--work", type=Path, default=Path("/tmp/ragloom-scale"))
    parser.add_argument("--cache", type=Path, default=Path("/tmp/ragloom-scale/cache"))
    parser.add_argument(
        "--passes",
        type=int,
        default=PASSES,
        help="timed passes of the query mix for settled ragloom, Qdrant and bm25s (default 3)",
    )
    parser.add_argument(
        "--peers",
        nargs="+",
        choices=PEERS,
        default=list(PEERS),
        help="peers measured beside ragloom (default: all; embedded Qdrant's optimize takes "
        "minutes at 1M, so `--peers bm25s` measures ragloom against the issue's 1M peer alone)",
    )
    parser.add_argument(
        "--hand-on",
        action="store_true",
        help="build with close(finish=False): the work the writes made due is left to the "
        "next opener (the state every build left before issue 48: its at-open columns show "
        "the searches of that window)",
    )
    args = parser.parse_args()
    which = set(args.peers)
    args.work.mkdir(parents=True, exist_ok=True)
    corpus = Corpus()
    console.print(
        "embedder: bench-clustered-384 (table lookup), model: none, runtime: numpy; "
        "ragloom: embedded SQLite store, faiss HNSW graphs on large segments"
    )
    console.print(f"ragloom measured: {ragloom_source()}")
    for n in args.sizes:
        path = args.work / f"scale-{n}.db"
        remove_index(path)
        lexical_path = args.work / f"scale-{n}-lexical.db"
        close = "hand-on" if args.hand_on else "finish"
        lexical = run("build-lexical", lexical_path, n, args.cache, close=close)
        remove_index(lexical_path)
        if "bm25s" in which:
            lexical["bm25s"] = run("build-bm25s", lexical_path, n, args.cache, args.passes)
        build = run("build", path, n, args.cache, close=close)
        serve = run("serve", path, n, args.cache, args.passes)
        disk = sizes_on_disk(path, n)
        writes = run("writes", path, n, args.cache)
        peer = peers(corpus, n, args.work, args.cache, which)
        qdrant = None
        if "qdrant" in which:
            shard = args.work / f"qdrant-{n}"
            qdrant = {"build": run("build-qdrant", shard, n, args.cache)}
            qdrant["serve"] = run("serve-qdrant", shard, n, args.cache, args.passes)
        (args.work / f"scale-{n}.json").write_text(
            json.dumps(
                {
                    "build": build,
                    "build_lexical": lexical,
                    "disk": disk,
                    "serve": serve,
                    "writes": writes,
                    "peers": peer,
                    "qdrant": qdrant,
                }
            )
        )
        report(n, build, lexical, disk, serve, writes, peer, qdrant)


if __name__ == "__main__":
    main()
