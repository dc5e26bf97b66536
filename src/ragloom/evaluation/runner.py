"""Run a BEIR collection through a temporary index and score the ranking."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragloom.config import CollectionConfig
from ragloom.evaluation.beir import load_beir
from ragloom.evaluation.metrics import evaluate_run
from ragloom.index import Index

EVAL_COLLECTION = "eval"


def whole_document_config(**changes: Any) -> CollectionConfig:
    """BEIR's convention: each document is one retrieval unit, title and text together."""
    base = CollectionConfig().to_dict()
    base["chunking"] = {**base["chunking"], "max_chars": 0, "overlap": 0}
    base.update(changes)
    return CollectionConfig.from_dict(base)


@dataclass
class EvalResult:
    """Quality and speed figures of one evaluation run."""

    dataset: str
    split: str
    queries: int
    documents: int
    chunks: int
    metrics: dict[str, float]
    index_seconds: float
    query_seconds: float
    config: dict[str, Any] = field(default_factory=dict)

    @property
    def queries_per_second(self) -> float:
        return self.queries / self.query_seconds if self.query_seconds else float("inf")

    def to_dict(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "split": self.split,
            "queries": self.queries,
            "documents": self.documents,
            "chunks": self.chunks,
            **self.metrics,
            "index_seconds": round(self.index_seconds, 3),
            "query_seconds": round(self.query_seconds, 3),
            "queries_per_second": round(self.queries_per_second, 1),
            "config": self.config,
        }


def rank_documents(
    index: Index,
    query: str,
    depth: int,
    doc_of_row: dict[int, str],
    exclude_id: str | None = None,
) -> list[str]:
    """Top `depth` document ids for a query: chunk hits folded to their best-scoring document."""
    fetch = depth + 1
    while True:
        rows, _ = index.search_rows(query, fetch, EVAL_COLLECTION)
        ranked: list[str] = []
        seen: set[str] = set()
        for row in rows.tolist():
            doc = doc_of_row[row]
            if doc not in seen and doc != exclude_id:
                seen.add(doc)
                ranked.append(doc)
        if len(ranked) >= depth or len(rows) < fetch:
            return ranked[:depth]
        fetch *= 4


def run_beir(
    folder: str | Path,
    split: str = "test",
    config: CollectionConfig | None = None,
    keep_self_hits: bool = False,
    depth: int = 100,
    index_path: str | Path | None = None,
    on_progress: Callable[[str, int, int], None] | None = None,
) -> EvalResult:
    """Index the corpus into a fresh index (temporary unless `index_path`) and evaluate.

    A hit whose document id equals the query id is ignored unless `keep_self_hits`.
    """
    dataset = load_beir(folder, split)
    config = config or whole_document_config()
    with tempfile.TemporaryDirectory(prefix="ragloom-eval-") as tmp:
        path = Path(index_path) if index_path else Path(tmp) / "eval.db"
        with Index(path) as index:
            index.configure(EVAL_COLLECTION, **config.to_dict())
            started = time.perf_counter()
            report = index.add(
                dataset.iter_corpus(),
                EVAL_COLLECTION,
                on_batch=(lambda n: on_progress("index", n, 0)) if on_progress else None,
            )
            index_seconds = time.perf_counter() - started
            doc_of_row = index.chunk_documents(EVAL_COLLECTION)
            run: dict[str, list[str]] = {}
            started = time.perf_counter()
            for qid, text in dataset.queries.items():
                exclude = None if keep_self_hits else qid
                run[qid] = rank_documents(index, text, depth, doc_of_row, exclude)
            query_seconds = time.perf_counter() - started
    metrics = evaluate_run(run, dataset.qrels, k_ndcg=10, k_recall=depth, k_mrr=10)
    n_queries = int(metrics.pop("queries"))
    return EvalResult(
        dataset=dataset.name,
        split=split,
        queries=n_queries,
        documents=report.documents + report.unchanged,
        chunks=len(doc_of_row),
        metrics=metrics,
        index_seconds=index_seconds,
        query_seconds=query_seconds,
        config=config.to_dict(),
    )
