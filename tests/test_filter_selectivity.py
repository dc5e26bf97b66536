"""Filters inside both legs: at 0.1% selectivity on SciFact the top-k equals filter-then-rank."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from ragloom import Index
from ragloom.embedding.http import OllamaEmbedder
from ragloom.evaluation.beir import load_beir
from ragloom.retrieval import fusion
from ragloom.retrieval.pipeline import (
    DENSE,
    LEXICAL,
    drop_weak_dense_only,
    leg_candidates,
)
from ragloom.retrieval.search_options import SearchOptions

from .conftest import shared_dataset
from .embed_server import EmbedServer
from .fusion_reference import top_k

pytestmark = pytest.mark.slow
EVERYTHING = 10_000


@pytest.fixture(scope="module")
def scifact_index(tmp_path_factory):
    dataset = load_beir(shared_dataset("scifact"))
    docs = [
        replace(d, metadata={**d.metadata, "bucket": i % 1000})  # bucket 7: 0.1% of documents
        for i, d in enumerate(dataset.iter_corpus())
    ]
    bucket_of = {d.id: d.metadata["bucket"] for d in docs}
    with EmbedServer() as server:  # a deterministic embedding service over real HTTP
        embedder = OllamaEmbedder(server.url, "hashed-words", batch_size=256, retry_delay=0.01)
        path = Path(tmp_path_factory.mktemp("sel")) / "scifact.db"
        with Index(path, embedder=embedder) as index:
            index.configure(chunking={"max_chars": 0, "overlap": 0, "min_chars": 1})
            index.add(docs)
            doc_of_row = index.chunk_documents()
            eligible = {row for row, doc in doc_of_row.items() if bucket_of[doc] == 7}
            assert len(eligible) == 6  # 6 of 5,183 documents: about 0.1%
            yield index, list(dataset.queries.values())[:40], eligible


def brute_force(index: Index, query: str, mode: str, eligible: set[int], k: int = 3):
    """Rank every chunk unfiltered, keep the eligible ones, take each leg's top 40, fuse (RRF),
    cut to k in the total order (ties by document id)."""
    documents = index.chunk_documents()

    def keys_of(rows: list[int]) -> dict[int, tuple[str, int]]:
        return {row: (documents[row], 0) for row in rows}  # one chunk per document

    def leg(name: str):
        ranked = index.rank(query, SearchOptions(mode=name, top_k=EVERYTHING)).candidates
        kept = [c for c in ranked if c.row_id in eligible][:40]
        rows = [c.row_id for c in kept]
        return leg_candidates(name, np.array(rows, np.int64), np.array([c.score for c in kept]))

    lexical = leg(LEXICAL)
    if mode == "lexical":
        return [(c.row_id, c.score) for c in top_k(lexical, k, keys_of)]
    fused = fusion.reciprocal_rank_fusion({LEXICAL: lexical, DENSE: leg(DENSE)})
    kept = drop_weak_dense_only(fused, 0.45)
    return [(c.row_id, c.score) for c in top_k(kept, k, keys_of)]


@pytest.mark.parametrize("mode", ["lexical", "hybrid"])
def test_selective_filter_matches_filter_then_rank(scifact_index, mode):
    index, queries, eligible = scifact_index
    compared = 0
    for query in queries:
        options = SearchOptions(  # the floor named: this model has no measured floor of its own
            mode=mode, top_k=3, filters={"bucket": 7}, fusion="rrf", min_dense_similarity=0.45
        )
        got = [(c.row_id, pytest.approx(c.score)) for c in index.rank(query, options).candidates]
        want = brute_force(index, query, mode, eligible)
        assert got == want
        compared += bool(want)
    assert compared >= 10  # most queries do reach the few eligible documents
    hits = index.search(queries[0], top_k=3, mode=mode, filters={"bucket": 7})
    assert all(h.metadata["bucket"] == 7 for h in hits)
