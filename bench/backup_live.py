"""Backups of a live index: a writer adding SciFact documents without pause, 4 threads
searching, and `ragloom backup` taken again and again.

Usage: python bench/backup_live.py [--data ../shared/data] [--backups 20] [--base 1000]
                                   [--embedder local] [--quiet 15] [--work DIR]
The index starts with the first --base SciFact documents (hybrid, the local model); then one
thread adds the following documents one write at a time, and 4 threads run hybrid searches
(query embedding included) over the test queries. After a --quiet phase with no backup, the
backups run one after the other (another connection, as another process would). Afterwards
each backup is restored and must pass `check` and equal one committed version exactly: the
base plus the first k added documents, each document, chunk, index term and vector as the
source holds it, and the same top 10 (ids and scores) for 30 queries in lexical, dense and
hybrid mode as a copy of the source cut back to that version. Searches that overlapped a
backup are compared with those of the quiet phase (p50, the same load otherwise).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.index_state
from ragloom import Index  # noqa: E402
from ragloom.evaluation.beir import load_beir  # noqa: E402
from ragloom.operations import backup, restore  # noqa: E402
from tests.index_state import contents, searches  # noqa: E402


class Load:
    """The writer and the searchers, with each search's start, end and duration."""

    def __init__(self, index: Index, documents: list, queries: list[str]) -> None:
        self.index, self.documents, self.queries = index, documents, queries
        self.stop = threading.Event()
        self.added: list[str] = []
        self.timings: list[tuple[float, float]] = []
        self.errors: list[str] = []
        self.threads = [threading.Thread(target=self.write)]
        self.threads += [threading.Thread(target=self.search, args=(i,)) for i in range(4)]

    def write(self) -> None:
        for doc in self.documents:
            if self.stop.is_set():
                return
            self.index.add([doc])
            self.added.append(doc.id)

    def search(self, offset: int) -> None:
        i = offset
        while not self.stop.is_set():
            started = time.perf_counter()
            try:
                self.index.search(self.queries[i % len(self.queries)], top_k=10)
            except Exception as exc:  # counted and reported, never hidden
                self.errors.append(repr(exc))
            self.timings.append((started, time.perf_counter()))
            i += 4

    def __enter__(self) -> Load:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join()


def cut_back(final: Path, keep: set[str], folder: Path) -> Path:
    """A copy of the final index with every document outside `keep` deleted: the searches of
    the version that held exactly `keep`."""
    backup(final, folder / "final-copy")
    path = folder / "reference.db"
    restore(folder / "final-copy", path)
    with Index(path) as index:
        for doc in index.documents(limit=10**6):
            if doc.doc_id not in keep:
                index.delete(doc.doc_id)
        index.optimize()
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = os.environ.get("RAGLOOM_DATA", Path(__file__).resolve().parents[2] / "shared/data")
    parser.add_argument("--data", default=str(default))
    parser.add_argument("--backups", type=int, default=20)
    parser.add_argument("--base", type=int, default=1000)
    parser.add_argument("--embedder", default="local")
    parser.add_argument("--quiet", type=float, default=15.0, help="seconds without backups")
    parser.add_argument("--pause", type=float, default=0.5, help="seconds between backups")
    parser.add_argument("--work", default=None)
    args = parser.parse_args()
    dataset = load_beir(Path(args.data) / "scifact")
    corpus = list(dataset.iter_corpus())
    queries = list(dataset.queries.values())
    work = Path(args.work or tempfile.mkdtemp(prefix="ragloom-backup-"))
    work.mkdir(parents=True, exist_ok=True)
    path = work / "live.db"
    base_ids = {d.id for d in corpus[: args.base]}
    with Index(path, embedder=args.embedder) as index:
        index.add(corpus[: args.base])
        index.optimize()
        with Load(index, corpus[args.base :], queries) as load:
            time.sleep(args.quiet)
            quiet_end = time.perf_counter()
            spans = []
            for n in range(args.backups):
                started = time.perf_counter()
                manifest = backup(path, work / f"backup-{n:02d}")
                spans.append((started, time.perf_counter(), manifest.generation))
                time.sleep(args.pause)
        added = list(load.added)
    final = contents(path)
    order = {doc: i for i, doc in enumerate(added)}
    rows = []
    for n, (started, ended, generation) in enumerate(spans):
        restored = work / f"restored-{n:02d}.db"
        restore(work / f"backup-{n:02d}", restored)
        copy = contents(restored)
        ids = {doc for _, doc in copy}
        new = sorted((order[d] for d in ids - base_ids), key=int)
        prefix = new == list(range(len(new)))
        exact = prefix and base_ids <= ids and all(copy[k] == final[k] for k in copy)
        folder = Path(tempfile.mkdtemp(dir=work))
        reference = cut_back(path, ids, folder)
        with Index(restored) as a, Index(reference) as b:
            problems = a.check()
            same = searches(a, queries[:30]) == searches(b, queries[:30])
        rows.append((n, generation, len(new), ended - started, problems == [], exact, same))
    during = [
        e - s
        for s, e in load.timings
        if any(s < b_end and e > b_start for b_start, b_end, _ in spans)
    ]
    quiet = [e - s for s, e in load.timings if e <= quiet_end]
    show(rows, quiet, during, load, args)
    ok = all(r[4] and r[5] and r[6] for r in rows) and not load.errors
    sys.exit(0 if ok else 1)


def show(rows, quiet, during, load, args) -> None:
    table = Table(title=f"{len(rows)} backups of a live SciFact index ({args.embedder} model)")
    columns = ("backup", "version", "docs added", "seconds", "check ok", "= that version")
    for column in (*columns, "searches equal"):
        table.add_column(column, justify="right")
    for n, generation, added, seconds, check, exact, same in rows:
        flags = ["yes" if x else "NO" for x in (check, exact, same)]
        table.add_row(str(n), str(generation), str(added), f"{seconds:.2f}", *flags)
    console = Console(width=160)
    console.print(table)
    p50q, p50d = statistics.median(quiet) * 1000, statistics.median(during) * 1000
    console.print(
        f"searches: {len(quiet)} in the quiet phase, p50 {p50q:.1f} ms; {len(during)} during "
        f"backups, p50 {p50d:.1f} ms; ratio {p50d / p50q:.2f} (target <= 1.5); "
        f"{len(load.added)} documents added by the writer; {len(load.errors)} search errors"
    )


if __name__ == "__main__":
    main()
