"""A small BEIR-layout collection with train and test splits, written for evaluation tests,
and `run_beir`: index a BEIR folder and evaluate one search over it, as the tests need."""

from __future__ import annotations

import json
import random
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragloom.config import CollectionConfig
from ragloom.embedding import Embedder
from ragloom.evaluation.beir import load_beir
from ragloom.evaluation.runner import (
    EVAL_COLLECTION,
    build_index,
    evaluate_index,
    whole_document_config,
)
from ragloom.index import Index
from ragloom.retrieval.search_options import SearchOptions

TOPICS = [
    ["copper", "wire", "current", "conductor", "voltage"],
    ["glacier", "ice", "melt", "valley", "moraine"],
    ["violin", "bow", "string", "concerto", "tuning"],
    ["bread", "yeast", "dough", "oven", "crust"],
    ["comet", "orbit", "tail", "nucleus", "perihelion"],
    ["harbor", "ship", "anchor", "dock", "tide"],
    ["orchard", "apple", "blossom", "graft", "harvest"],
    ["falcon", "prey", "dive", "talon", "nest"],
    ["ledger", "debit", "credit", "audit", "balance"],
    ["volcano", "lava", "ash", "crater", "eruption"],
]
FILLER = [
    "the",
    "a",
    "of",
    "and",
    "in",
    "on",
    "with",
    "from",
    "about",
    "very",
    "often",
    "some",
    "many",
    "other",
    "each",
]


def write_collection(folder: Path, seed: int = 7) -> Path:
    """Four documents per topic; two training and two test queries per topic."""
    rng = random.Random(seed)
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    corpus, queries, qrels = [], [], {"train": [], "test": []}
    for t, words in enumerate(TOPICS):
        for d in range(4):
            picked = rng.sample(words, 3) + rng.sample(FILLER, 5)
            rng.shuffle(picked)
            corpus.append({"_id": f"t{t}d{d}", "title": words[d % 5], "text": " ".join(picked)})
        for split, offset in (("train", 0), ("test", 2)):
            for n in range(2):
                qid = f"{split}-t{t}q{n}"
                text = " ".join(rng.sample(words, 2) + rng.sample(FILLER, 1))
                queries.append({"_id": qid, "text": text})
                for d in range(4):
                    qrels[split].append((qid, f"t{t}d{d}", 2 if d == (n + offset) % 4 else 1))
    (folder / "corpus.jsonl").write_text("\n".join(json.dumps(d) for d in corpus))
    (folder / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in queries))
    for split, rows in qrels.items():
        lines = ["query-id\tcorpus-id\tscore"] + [f"{q}\t{d}\t{g}" for q, d, g in rows]
        (folder / "qrels" / f"{split}.tsv").write_text("\n".join(lines) + "\n")
    return folder


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
    mode: str = "lexical"
    config: dict[str, Any] = field(default_factory=dict)

    @property
    def queries_per_second(self) -> float:
        return self.queries / self.query_seconds if self.query_seconds else float("inf")

    def to_dict(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "split": self.split,
            "mode": self.mode,
            "queries": self.queries,
            "documents": self.documents,
            "chunks": self.chunks,
            **self.metrics,
            "index_seconds": round(self.index_seconds, 3),
            "query_seconds": round(self.query_seconds, 3),
            "queries_per_second": round(self.queries_per_second, 1),
            "config": self.config,
        }


def run_beir(
    folder: str | Path,
    split: str = "test",
    config: CollectionConfig | None = None,
    keep_self_hits: bool = False,
    depth: int = 100,
    index_path: str | Path | None = None,
    on_progress: Callable[[str, int, int], None] | None = None,
    options: SearchOptions | None = None,
    embedder: str | Embedder | None = None,
) -> EvalResult:
    """Index the corpus (into a temporary file unless `index_path`) and evaluate one search.

    `embedder` None evaluates lexical search only; give one (e.g. "local") for dense/hybrid.
    A hit whose document id equals the query id is ignored unless `keep_self_hits`.
    """
    dataset = load_beir(folder, split)
    config = config or whole_document_config()
    options = options or SearchOptions(mode="lexical" if embedder is None else None)
    with tempfile.TemporaryDirectory(prefix="ragloom-eval-") as tmp:
        path = Path(index_path) if index_path else Path(tmp) / "eval.db"
        with Index(path, embedder=embedder) as index:
            index_seconds = build_index(index, dataset, config, on_progress)
            metrics, query_seconds = evaluate_index(index, dataset, options, keep_self_hits, depth)
            stats = index.stats()["collections"][EVAL_COLLECTION]
            mode = options.mode or ("hybrid" if stats["vectors"] else "lexical")
    n_queries = int(metrics.pop("queries"))
    return EvalResult(
        dataset=dataset.name,
        split=split,
        queries=n_queries,
        documents=stats["documents"],
        chunks=stats["chunks"],
        metrics=metrics,
        index_seconds=index_seconds,
        query_seconds=query_seconds,
        mode=mode,
        config=config.to_dict(),
    )
