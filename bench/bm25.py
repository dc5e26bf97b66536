"""BM25 benchmark: ragloom against bm25s on the same collections, in one run.

Usage: python bench/bm25.py [--data ../shared/data] [--datasets scifact cranfield]
Prints nDCG@10, Recall@100, index time and single-query top-10 throughput for both
libraries with the ratio ragloom / bm25s. Same k1/b (0.9/0.4), Lucene IDF, Lucene's English
stop words and the Snowball English stemmer on both sides; title and text indexed together.
Lexical only on both sides: ragloom's index is opened with embedder=None (never the local
model, whatever is installed); both run single-threaded (bm25s with n_threads=1).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import bm25s
import Stemmer
from rich.console import Console
from rich.table import Table

from ragloom import Index
from ragloom.evaluation.beir import load_beir
from ragloom.evaluation.metrics import evaluate_run
from ragloom.evaluation.runner import EVAL_COLLECTION, rank_documents, whole_document_config
from ragloom.text import analyzer_for
from ragloom.text.stopwords import ENGLISH

K1, B = 0.9, 0.4
DEPTH = 100


def bench_ragloom(folder: Path, repeats: int) -> dict[str, float]:
    """Index into a fresh SQLite file (persisted), then rank and time top-10 queries."""
    dataset = load_beir(folder)
    queries = list(dataset.queries.items())
    index_times = []
    for _ in range(repeats):
        with (
            tempfile.TemporaryDirectory() as tmp,
            Index(Path(tmp) / "bench.db", embedder=None) as index,
        ):
            index.configure(EVAL_COLLECTION, **whole_document_config().to_dict())
            documents = list(dataset.iter_corpus())
            analyzer_for.cache_clear()  # a first build: no word stemmed by an earlier repeat
            started = time.perf_counter()
            index.add(documents, EVAL_COLLECTION)
            index.optimize()  # settle the new segments as a server does once writes pause
            index_times.append(time.perf_counter() - started)
    with (
        tempfile.TemporaryDirectory() as tmp,
        Index(Path(tmp) / "bench.db", embedder=None) as index,
    ):
        index.configure(EVAL_COLLECTION, **whole_document_config().to_dict())
        index.add(dataset.iter_corpus(), EVAL_COLLECTION)
        index.optimize()
        doc_of_row = index.chunk_documents(EVAL_COLLECTION)
        run = {
            q: rank_documents(index, text, DEPTH, doc_of_row, exclude_id=q) for q, text in queries
        }
        qps = []
        for _ in range(repeats):
            started = time.perf_counter()
            for _, text in queries:
                index.search_rows(text, 10, EVAL_COLLECTION)
            qps.append(len(queries) / (time.perf_counter() - started))
        hits_qps = []
        for _ in range(repeats):
            started = time.perf_counter()
            for _, text in queries:
                index.search(text, top_k=10, collection=EVAL_COLLECTION)
            hits_qps.append(len(queries) / (time.perf_counter() - started))
    metrics = evaluate_run(run, dataset.qrels, k_recall=DEPTH)
    return {
        **metrics,
        "index_s": statistics.median(index_times),
        "qps": statistics.median(qps),
        "qps_hits": statistics.median(hits_qps),
    }


def bench_bm25s(folder: Path, repeats: int) -> dict[str, float]:
    """bm25s with the same analysis; queries one at a time (like an app), and batched."""
    dataset = load_beir(folder)
    docs = list(dataset.iter_corpus())
    ids = [d.id for d in docs]
    texts = [f"{d.title or ''} {d.text}" for d in docs]
    queries = list(dataset.queries.items())
    stemmer = Stemmer.Stemmer("english")
    index_times = []
    for _ in range(repeats):
        started = time.perf_counter()
        tokenizer = bm25s.tokenization.Tokenizer(stopwords=sorted(ENGLISH), stemmer=stemmer)
        corpus_ids = tokenizer.tokenize(
            texts, update_vocab=True, return_as="ids", show_progress=False
        )
        retriever = bm25s.BM25(k1=K1, b=B, method="lucene")
        retriever.index(corpus_ids, show_progress=False)
        index_times.append(time.perf_counter() - started)

    def query_ids(text: str) -> list[list[int]]:
        return tokenizer.tokenize([text], update_vocab=False, return_as="ids", show_progress=False)

    run = {}
    for qid, text in queries:
        docs_found, _ = retriever.retrieve(query_ids(text), k=DEPTH + 1, show_progress=False)
        ranked = [ids[i] for i in docs_found[0].tolist() if ids[i] != qid]
        run[qid] = ranked[:DEPTH]
    qps = []
    for _ in range(repeats):
        started = time.perf_counter()
        for _, text in queries:
            retriever.retrieve(query_ids(text), k=10, show_progress=False, n_threads=1)
        qps.append(len(queries) / (time.perf_counter() - started))
    batched = []
    for _ in range(repeats):
        started = time.perf_counter()
        all_ids = tokenizer.tokenize(
            [t for _, t in queries], update_vocab=False, return_as="ids", show_progress=False
        )
        retriever.retrieve(all_ids, k=10, show_progress=False, n_threads=1)
        batched.append(len(queries) / (time.perf_counter() - started))
    metrics = evaluate_run(run, dataset.qrels, k_recall=DEPTH)
    return {
        **metrics,
        "index_s": statistics.median(index_times),
        "qps": statistics.median(qps),
        "qps_batched": statistics.median(batched),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_data = Path(__file__).resolve().parents[2] / "shared" / "data"
    parser.add_argument("--data", type=Path, default=default_data)
    parser.add_argument("--datasets", nargs="+", default=["scifact", "cranfield"])
    parser.add_argument("--repeats", type=int, default=3, help="runs per timing (median kept)")
    args = parser.parse_args()

    table = Table(title=f"BM25: ragloom vs bm25s {bm25s.__version__} (k1={K1}, b={B})")
    for col in ("dataset", "system", "nDCG@10", "R@100", "MRR@10", "index s", "queries/s top-10"):
        table.add_column(col, justify="right")
    ratios = Table(title="ratios (ragloom / bm25s)")
    for col in (
        "dataset",
        "nDCG@10",
        "index time",
        "queries/s (one at a time)",
        "ragloom with hits / bm25s batched",
    ):
        ratios.add_column(col, justify="right")
    for name in args.datasets:
        folder = args.data / name
        if not folder.exists():
            sys.exit(f"missing collection {folder}")
        ours = bench_ragloom(folder, args.repeats)
        theirs = bench_bm25s(folder, args.repeats)
        table.add_row(
            name,
            "ragloom",
            f"{ours['ndcg@10']:.4f}",
            f"{ours['recall@100']:.4f}",
            f"{ours['mrr@10']:.4f}",
            f"{ours['index_s']:.2f}",
            f"{ours['qps']:.0f} (with hits: {ours['qps_hits']:.0f})",
        )
        table.add_row(
            name,
            "bm25s",
            f"{theirs['ndcg@10']:.4f}",
            f"{theirs['recall@100']:.4f}",
            f"{theirs['mrr@10']:.4f}",
            f"{theirs['index_s']:.2f}",
            f"{theirs['qps']:.0f} (batched: {theirs['qps_batched']:.0f})",
        )
        ratios.add_row(
            name,
            f"{ours['ndcg@10'] / theirs['ndcg@10']:.3f}",
            f"{ours['index_s'] / theirs['index_s']:.2f}x",
            f"{ours['qps'] / theirs['qps']:.2f}x",
            f"{ours['qps_hits'] / theirs['qps_batched']:.2f}x",
        )
    console = Console(width=140)
    console.print(
        "embedder: none (lexical only, set explicitly); threads: 1 (ragloom), "
        f"n_threads=1 (bm25s {bm25s.__version__}); stemmer: PyStemmer english"
    )
    console.print(table)
    console.print(ratios)
    console.print("ragloom index time includes writing the SQLite file; bm25s stays in memory.")


if __name__ == "__main__":
    main()
