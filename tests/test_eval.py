"""Evaluation runner: self-hit convention, and the quality targets on the shared collections."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.eval_data import run_beir

from .conftest import shared_dataset


def make_folder(tmp_path: Path) -> Path:
    """A corpus whose query q1 is also document q1 (the ArguAna/Quora situation)."""
    folder = tmp_path / "selfish"
    (folder / "qrels").mkdir(parents=True)
    corpus = [
        {"_id": "q1", "title": "", "text": "raven tower signal fire"},
        {"_id": "d2", "title": "", "text": "the raven tower burned its signal fire at dusk"},
        {"_id": "d3", "title": "", "text": "unrelated text about barley harvests"},
    ]
    (folder / "corpus.jsonl").write_text("\n".join(json.dumps(d) for d in corpus))
    (folder / "queries.jsonl").write_text(
        json.dumps({"_id": "q1", "text": "raven tower signal fire"})
    )
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td2\t1\n")
    return folder


def test_self_hits_are_ignored_by_default(tmp_path: Path):
    result = run_beir(make_folder(tmp_path))
    assert result.metrics["mrr@10"] == 1.0


def test_self_hits_can_be_kept(tmp_path: Path):
    result = run_beir(make_folder(tmp_path), keep_self_hits=True)
    assert result.metrics["mrr@10"] == 0.5


def test_chunked_documents_fold_to_their_best_chunk(tmp_path: Path):
    from ragloom.evaluation.runner import whole_document_config

    config = whole_document_config(chunking={"max_chars": 30, "overlap": 0, "min_chars": 1})
    result = run_beir(make_folder(tmp_path), config=config)
    assert result.chunks > result.documents
    assert result.metrics["mrr@10"] == 1.0


@pytest.mark.slow
def test_scifact_bm25_reaches_lucene():
    result = run_beir(shared_dataset("scifact"))
    assert result.queries == 300
    assert result.metrics["ndcg@10"] >= 0.679  # Lucene flat BM25: 0.6789
    assert result.metrics["recall@100"] >= 0.91


@pytest.mark.slow
def test_cranfield_bm25_matches_the_reference_run():
    result = run_beir(shared_dataset("cranfield"))
    assert result.queries == 225
    assert result.metrics["ndcg@10"] >= 0.32  # bm25s reference: 0.3227
