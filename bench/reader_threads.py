"""What each searching thread's own SQLite reader connection costs in memory: every thread
maps the index file (`PRAGMA mmap_size`, `ragloom.store.sqlite.connect`), so the file's
pages are shared but each mapping has its own page tables, and `ps` counts a shared page
once per mapping. Measured with the mapping and without it (each connection then keeps its
own page cache, anonymous memory), each case in a fresh process.

Usage: python bench/reader_threads.py INDEX [--threads 1 40] [--searches 200]

INDEX is any ragloom index file; the searches are lexical (they read their hits' text and
metadata from SQLite, which is what the mapping serves), their queries the first words of 400
of the index's own documents from all over it. Prints, per case, the process's page tables
(VmPTE), anonymous memory (RssAnon) and resident file pages (RssFile) once every thread has
searched.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading

from rich.console import Console
from rich.table import Table

FIELDS = ("VmPTE", "RssAnon", "RssFile")


def _status_mb() -> dict[str, float]:
    """This process's memory figures from /proc, in MB."""
    out = {}
    with open("/proc/self/status") as status:
        for line in status:
            name, value = line.split(":", 1)
            if name in FIELDS:
                out[name] = int(value.split()[0]) / 1024
    return out


def run_case(path: str, threads: int, searches: int, mapped: bool) -> dict:
    """One case in this process: `threads` threads, `searches` lexical searches each."""
    from ragloom import Index
    from ragloom.store.sqlite import connect

    if not mapped:
        connect.MMAP_BYTES = 0
    index = Index(path, embedder="none")  # lexical searches need no model
    index.warm()
    total = sum(c["documents"] for c in index.stats()["collections"].values())
    step = max(1, total // 400)  # documents from all over the file, so hits are too
    docs = [d for i in range(0, total, step) for d in index.documents(offset=i, limit=1)]
    queries = [" ".join(index.document_text(d.doc_id, d.collection).split()[:6]) for d in docs]

    def work(t: int) -> None:
        for i in range(searches):
            index.search(queries[(t * 7 + i) % len(queries)], top_k=10, mode="lexical")

    pool = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    figures = _status_mb()
    figures["readers"] = len(index.store._readers)
    index.close()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("index")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 40])
    parser.add_argument("--searches", type=int, default=200)
    parser.add_argument("--case", help=argparse.SUPPRESS)  # one case, in a child process
    args = parser.parse_args()
    if args.case:
        threads, mapped = args.case.split(",")
        print(json.dumps(run_case(args.index, int(threads), args.searches, mapped == "mapped")))
        return
    table = Table(title=f"Reader connections' memory, {args.searches} lexical searches a thread")
    for column in ("threads", "file mapped", "reader connections", *FIELDS):
        table.add_column(column if column not in FIELDS else f"{column} MB", justify="right")
    for threads in args.threads:
        for mapped in ("mapped", "unmapped"):
            command = [sys.executable, __file__, args.index, "--searches", str(args.searches)]
            done = subprocess.run(
                [*command, "--case", f"{threads},{mapped}"],
                capture_output=True,
                text=True,
                check=True,
            )
            row = json.loads(done.stdout.strip().splitlines()[-1])
            table.add_row(
                str(threads),
                "yes" if mapped == "mapped" else "no",
                str(row["readers"]),
                *(f"{row[name]:,.1f}" for name in FIELDS),
            )
    Console().print(table)


if __name__ == "__main__":
    main()
