"""Run a BEIR collection through an index and score the ranking."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ragloom.config import CollectionConfig
from ragloom.evaluation.beir import BeirDataset
from ragloom.evaluation.metrics import evaluate_run
from ragloom.index import Index
from ragloom.retrieval.search_options import SearchOptions

EVAL_COLLECTION = "eval"


def whole_document_config(**changes: Any) -> CollectionConfig:
    """BEIR's convention: each document is one retrieval unit, title and text together.

    Code documents stay whole too. `changes` override config keys, for example
    `tokenizer={"split_identifiers": True}` for identifier-aware lexical search on code.
    """
    base = CollectionConfig().to_dict()
    base["chunking"] = {**base["chunking"], "max_chars": 0, "overlap": 0}
    base["code_chunking"] = {**base["code_chunking"], "max_chars": 0, "overlap": 0}
    base.update(changes)
    return CollectionConfig.from_dict(base)


RowRanker = Callable[[str, SearchOptions], list[int]]


def index_ranker(index: Index, collection: str = EVAL_COLLECTION) -> RowRanker:
    """Rank chunk rows by searching the index (`Index.rank`)."""
    return lambda query, opts: [c.row_id for c in index.rank(query, opts, collection).candidates]


def rank_documents(
    index: Index | RowRanker,
    query: str,
    depth: int,
    doc_of_row: dict[int, str],
    exclude_id: str | None = None,
    options: SearchOptions | None = None,
) -> list[str]:
    """Top `depth` document ids for a query: chunk hits folded to their best-scoring document.

    `index` is the index to search, or any function ranking chunk rows for (query, options)
    (the cached legs of `ragloom.evaluation.leg_cache`).
    """
    rank_rows = index_ranker(index) if isinstance(index, Index) else index
    fetch = depth + 1
    base = options or SearchOptions(mode="lexical")
    while True:
        wanted = replace(base, top_k=fetch, candidates=max(base.candidates, fetch))
        rows = rank_rows(query, wanted)
        ranked: list[str] = []
        seen: set[str] = set()
        for row in rows:
            doc = doc_of_row[row]
            if doc not in seen and doc != exclude_id:
                seen.add(doc)
                ranked.append(doc)
        if len(ranked) >= depth or len(rows) < fetch:
            return ranked[:depth]
        fetch *= 4


def build_index(
    index: Index,
    dataset: BeirDataset,
    config: CollectionConfig,
    on_progress: Callable[[str, int, int], None] | None = None,
) -> float:
    """Index the corpus into the eval collection (and take its fusion profile, as writes do);
    returns the seconds it took."""
    index.configure(EVAL_COLLECTION, **config.to_dict())
    started = time.perf_counter()
    index.add(
        dataset.iter_corpus(),
        EVAL_COLLECTION,
        on_batch=(lambda n: on_progress("index", n, 0)) if on_progress else None,
    )
    index.calibrate(EVAL_COLLECTION)  # when no document changed, the add took none
    return time.perf_counter() - started


def evaluate_index(
    index: Index,
    dataset: BeirDataset,
    options: SearchOptions,
    keep_self_hits: bool = False,
    depth: int = 100,
) -> tuple[dict[str, float], float]:
    """Metrics of the eval collection's ranking, and the seconds all queries took."""
    doc_of_row = index.chunk_documents(EVAL_COLLECTION)
    run: dict[str, list[str]] = {}
    started = time.perf_counter()
    for qid, text in dataset.queries.items():
        exclude = None if keep_self_hits else qid
        run[qid] = rank_documents(index, text, depth, doc_of_row, exclude, options)
    seconds = time.perf_counter() - started
    return evaluate_run(run, dataset.qrels, k_ndcg=10, k_recall=depth, k_mrr=10), seconds
