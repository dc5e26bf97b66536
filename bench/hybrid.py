"""Dense and hybrid retrieval benchmark on the shared BEIR collections.

Usage: python bench/hybrid.py [--data ../shared/data] [--datasets scifact cranfield]
                              [--cache /tmp/ragloom-bench] [--sample 256]
                              [--precision int8|float32] [--threads 2]
Prints nDCG@10, Recall@100 and MRR@10 for lexical, dense, hybrid-RRF and hybrid-weighted
(min-max and z-score), hybrid query latency p50/p95 with the query embedding included, and
ingest embedding throughput against the model's raw batched throughput. Indexes are kept in
--cache (the corpus is embedded once; later runs reuse it). The embedder is the local model
built here with the given precision and threads (printed first), never the installed default.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from ragloom import Index
from ragloom.embedding.local import GRAPH_VERSION, LocalEmbedder
from ragloom.evaluation.beir import load_beir
from ragloom.evaluation.runner import (
    EVAL_COLLECTION,
    build_index,
    evaluate_index,
    whole_document_config,
)
from ragloom.index import embedding_text
from ragloom.retrieval.search_options import SearchOptions

CONFIGS = {
    "lexical (BM25)": SearchOptions(mode="lexical"),
    "dense (MiniLM)": SearchOptions(mode="dense"),
    "hybrid RRF k=60": SearchOptions(mode="hybrid", fusion="rrf"),
    "hybrid weighted min-max": SearchOptions(mode="hybrid", fusion="weighted"),
    "hybrid weighted z-score": SearchOptions(
        mode="hybrid", fusion="weighted", normalization="zscore"
    ),
}


def cached_index(folder: Path, cache: Path, embedder: LocalEmbedder) -> tuple[Index, float | None]:
    """The collection's index from the cache folder, built (and timed) if missing."""
    dataset = load_beir(folder)
    cache.mkdir(parents=True, exist_ok=True)
    tag = f"{embedder.name}-g{GRAPH_VERSION}"  # vectors of another runtime are not reused
    index = Index(cache / f"{folder.name}-{tag}.db", embedder=embedder)
    if EVAL_COLLECTION in index.collections():
        stats = index.stats()["collections"][EVAL_COLLECTION]
        if stats["vectors"] == stats["chunks"] > 0:
            return index, None
    seconds = build_index(index, dataset, whole_document_config())
    return index, seconds


def ingest_throughput(
    folder: Path, embedder: LocalEmbedder, sample: int, repeats: int = 3
) -> tuple[float, float]:
    """Median (raw model passages/s, ingest passages/s) on the same `sample` documents.

    Raw and ingest runs alternate so that load from elsewhere hits both alike; each ingest
    goes into a fresh index (empty embedding cache), so every passage is embedded.
    """
    docs = list(load_beir(folder).iter_corpus())[:sample]
    texts = [embedding_text(d.title, d.text) for d in docs]
    embedder.embed(texts[:8])  # warm up
    raw, ingest = [], []
    for _ in range(repeats):
        started = time.perf_counter()
        embedder.embed(texts)
        raw.append(len(texts) / (time.perf_counter() - started))
        with (
            tempfile.TemporaryDirectory() as tmp,
            Index(Path(tmp) / "i.db", embedder=embedder) as idx,
        ):
            idx.configure(EVAL_COLLECTION, **whole_document_config().to_dict())
            started = time.perf_counter()
            idx.add(docs, EVAL_COLLECTION)
            ingest.append(len(docs) / (time.perf_counter() - started))
    return statistics.median(raw), statistics.median(ingest)


def latency(index: Index, queries: list[str], options: SearchOptions) -> tuple[float, float]:
    """p50/p95 milliseconds of `search` (hits fetched), query embedding included."""
    times = []
    for text in queries:
        index.clear_query_cache()
        started = time.perf_counter()
        index.search(
            text, top_k=10, collection=EVAL_COLLECTION, mode=options.mode, fusion=options.fusion
        )
        times.append((time.perf_counter() - started) * 1000)
    return float(np.percentile(times, 50)), float(np.percentile(times, 95))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data"
    )
    parser.add_argument("--datasets", nargs="+", default=["scifact", "cranfield"])
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "ragloom-bench")
    parser.add_argument("--sample", type=int, default=128, help="documents for the ingest test")
    parser.add_argument("--precision", choices=["int8", "float32"], default="int8")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    console = Console(width=140)
    embedder = LocalEmbedder(threads=args.threads, precision=args.precision)
    console.print(f"embedder: {embedder.runtime}")
    quality = Table(title="retrieval quality (test split)")
    for col in ("dataset", "method", "nDCG@10", "Recall@100", "MRR@10"):
        quality.add_column(col, justify="right")
    speed = Table(title="speed (2-core machine; hybrid search returns 10 hits)")
    for col in (
        "dataset",
        "hybrid p50 ms",
        "hybrid p95 ms",
        "lexical p50 ms",
        "raw model passages/s",
        "ingest passages/s",
        "ingest / raw",
        "full build s",
    ):
        speed.add_column(col, justify="right")
    for name in args.datasets:
        folder = args.data / name
        dataset = load_beir(folder)
        index, build_seconds = cached_index(folder, args.cache, embedder)
        with index:
            for label, options in CONFIGS.items():
                metrics, _ = evaluate_index(index, dataset, options)
                quality.add_row(
                    name,
                    label,
                    f"{metrics['ndcg@10']:.4f}",
                    f"{metrics['recall@100']:.4f}",
                    f"{metrics['mrr@10']:.4f}",
                )
            queries = list(dataset.queries.values())
            p50, p95 = latency(index, queries, CONFIGS["hybrid RRF k=60"])
            lex50, _ = latency(index, queries, CONFIGS["lexical (BM25)"])
        raw, ingest = ingest_throughput(folder, embedder, args.sample)
        speed.add_row(
            name,
            f"{p50:.1f}",
            f"{p95:.1f}",
            f"{lex50:.2f}",
            f"{raw:.1f}",
            f"{ingest:.1f}",
            f"{ingest / raw:.2f}",
            "cached" if build_seconds is None else f"{build_seconds:.0f}",
        )
        console.print(quality)
        console.print(speed)
    console.print(f"indexes cached in {args.cache}")


if __name__ == "__main__":
    main()
