"""SciFact on a shard set of three real servers ranks exactly as the embedded store (slow):
the top 10 of every test query, scores included (equal within 1e-6 relative, as one
PostgreSQL server is; chunks tied at the cut-off may swap)."""

from __future__ import annotations

import pytest

from ragloom import Index
from ragloom.evaluation.beir import load_beir
from ragloom.evaluation.runner import EVAL_COLLECTION, whole_document_config
from ragloom.lexical import BM25Params

from .conftest import shared_dataset
from .shard_set import start_shards
from .test_postgres_scifact import same_top

pytestmark = pytest.mark.slow


def documents_of(index: Index, ranking) -> tuple:
    owner = index.chunk_documents(EVAL_COLLECTION)
    rows, scores = ranking
    return [owner[int(r)] for r in rows], scores


def test_scifact_on_three_shards_ranks_as_the_embedded_store(tmp_path) -> None:
    import numpy as np

    dataset = load_beir(shared_dataset("scifact"))
    docs = list(dataset.iter_corpus())
    config = whole_document_config().to_dict()
    servers = start_shards(3)
    try:
        with (
            Index(tmp_path / "scifact.db", embedder=None) as embedded,
            Index(servers.url(), embedder=None) as sharded,
        ):
            for index in (embedded, sharded):
                index.configure(EVAL_COLLECTION, **config)
                index.add(docs, EVAL_COLLECTION)
            assert sorted(embedded.chunk_documents(EVAL_COLLECTION).values()) == sorted(
                sharded.chunk_documents(EVAL_COLLECTION).values()
            )
            numbers = {d.id: n for n, d in enumerate(docs)}  # one chunk a document
            queries = list(dataset.queries.values())
            assert len(queries) >= 300
            compared = 0
            for params in (None, BM25Params(k1=1.2, b=0.75)):
                for query in queries:
                    a_docs, a_scores = documents_of(
                        embedded, embedded.search_rows(query, 10, EVAL_COLLECTION, params)
                    )
                    b_docs, b_scores = documents_of(
                        sharded, sharded.search_rows(query, 10, EVAL_COLLECTION, params)
                    )
                    same_top(
                        (np.array([numbers[d] for d in a_docs]), a_scores),
                        (np.array([numbers[d] for d in b_docs]), b_scores),
                    )
                    compared += 1
            assert compared == 2 * len(queries)
            assert sharded.check() == []
    finally:
        servers.stop()
