"""Evaluation that reuses its work: cached legs rank as live search does, every mode and
fusion method is scored from one embedding of the corpus, a kept index is reused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragloom import Index
from ragloom.errors import InputError
from ragloom.evaluation.beir import load_beir
from ragloom.evaluation.leg_cache import LegCache
from ragloom.evaluation.metrics import evaluate_run
from ragloom.evaluation.prepare import manifest_path, prepared_index
from ragloom.evaluation.report import render_report
from ragloom.evaluation.runner import EVAL_COLLECTION, rank_documents, whole_document_config
from ragloom.evaluation.suite import parse_modes, run_suite, settings_for
from ragloom.retrieval.search_options import SearchOptions

from .embed_server import EmbedServer
from .eval_data import write_collection


@pytest.fixture(scope="module")
def service():
    with EmbedServer() as server:
        yield server


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_collection(tmp_path_factory.mktemp("beir") / "mini")


def spec(service: EmbedServer) -> str:
    return f"openai:fake@{service.url}"


def embedded_texts(service: EmbedServer) -> list[str]:
    return [text for body in service.requests for text in body["input"]]


SETTINGS = [
    SearchOptions(mode="lexical"),
    SearchOptions(mode="dense"),
    SearchOptions(mode="hybrid", fusion="rrf"),
    SearchOptions(mode="hybrid", fusion="rrf", rrf_k=5, weights={"dense": 0.3, "lexical": 0.7}),
    SearchOptions(mode="hybrid", fusion="weighted"),
    SearchOptions(mode="hybrid", fusion="weighted", normalization="zscore", candidates=5),
    SearchOptions(mode="hybrid", fusion="weighted", min_dense_similarity=-1.0, candidates=15),
    SearchOptions(mode="hybrid", fusion="weighted", min_dense_similarity=0.8),
]


def test_cached_legs_rank_exactly_as_live_search(folder: Path, service: EmbedServer) -> None:
    dataset = load_beir(folder)
    with prepared_index(dataset, whole_document_config(), spec(service)) as prepared:
        index = prepared.index
        cache = LegCache(index, EVAL_COLLECTION, dense=True, depth=30)
        cache.warm(dataset.queries.values())
        for options in SETTINGS:
            for top_k in (3, 10, 25):
                wanted = SearchOptions(**{**_fields(options), "top_k": top_k})
                for text in dataset.queries.values():
                    live = index.rank(text, wanted, EVAL_COLLECTION).candidates
                    cached = cache.rank_rows(text, wanted)
                    assert cached == [c.row_id for c in live], (options, top_k, text)
        # a deeper ask than the cache holds fetches the deeper list
        deep = SearchOptions(mode="hybrid", top_k=35, candidates=35)
        text = next(iter(dataset.queries.values()))
        live = [c.row_id for c in index.rank(text, deep, EVAL_COLLECTION).candidates]
        assert cache.rank_rows(text, deep) == live


def _fields(options: SearchOptions) -> dict:
    keys = ("mode", "fusion", "rrf_k", "weights", "normalization", "candidates")
    return {k: getattr(options, k) for k in keys} | {
        "min_dense_similarity": options.min_dense_similarity
    }


def test_every_mode_and_fusion_from_one_embedding(folder: Path, service: EmbedServer) -> None:
    service.requests.clear()
    result = run_suite(folder, modes=parse_modes("all"), embedder=spec(service), sweep=True)
    names = [s.setting.name for s in result.scored]
    assert names == [
        "lexical",
        "dense",
        "hybrid adaptive",
        "hybrid rrf k=60 d=1 l=1",
        "hybrid weighted min-max d=0.7 l=0.3",
        "hybrid weighted z-score d=0.7 l=0.3",
    ]
    assert [s.setting.name for s in result.scored if s.setting.default] == ["hybrid adaptive"]
    dataset = load_beir(folder)
    corpus = {f"{d.title}\n{d.text}" for d in dataset.iter_corpus()}
    texts = embedded_texts(service)
    assert sorted(t for t in texts if t in corpus) == sorted(corpus)  # each document once
    queries = [t for t in texts if t not in corpus and "fingerprint" not in t]
    assert sorted(queries) == sorted(dataset.queries.values())  # each query once
    assert result.queries == 20 and result.documents == 40
    # the figures are those of live searches: nDCG@10 of top-10, Recall@100 of top-100
    with Index(result_index := folder.parent / "live.db", embedder=spec(service)) as index:
        index.configure(EVAL_COLLECTION, **whole_document_config().to_dict())
        index.add(dataset.iter_corpus(), EVAL_COLLECTION)
        rows = index.chunk_documents(EVAL_COLLECTION)
        for scored in result.scored:
            options = scored.setting.options
            run10 = {
                q: rank_documents(index, t, 10, rows, q, options)
                for q, t in dataset.queries.items()
            }
            run100 = {
                q: rank_documents(index, t, 100, rows, q, options)
                for q, t in dataset.queries.items()
            }
            top10 = evaluate_run(run10, dataset.qrels, 10, 10, 10)
            top100 = evaluate_run(run100, dataset.qrels, 10, 100, 10)
            assert scored.metrics["ndcg@10"] == pytest.approx(top10["ndcg@10"])
            assert scored.metrics["mrr@10"] == pytest.approx(top10["mrr@10"])
            assert scored.metrics["recall@100"] == pytest.approx(top100["recall@100"])
            assert set(scored.queries) == set(dataset.qrels)
    result_index.unlink()
    methods = {p.method for p in result.sweep}
    assert methods == {"rrf k=60", "weighted min-max", "weighted z-score"}
    assert len(result.sweep) == 33
    data = result.to_dict()
    assert json.loads(json.dumps(data))["results"][0]["setting"] == "lexical"


def test_kept_index_is_reused_and_checked(
    folder: Path, service: EmbedServer, tmp_path: Path
) -> None:
    path = tmp_path / "kept.db"
    first = run_suite(folder, modes=["dense"], embedder=spec(service), index_path=path)
    assert not first.reused and manifest_path(path).exists()
    service.requests.clear()
    second = run_suite(folder, modes=["lexical", "hybrid"], embedder=spec(service), index_path=path)
    assert second.reused and second.build_seconds == 0
    corpus = {f"{d.title}\n{d.text}" for d in load_beir(folder).iter_corpus()}
    assert not corpus & set(embedded_texts(service))  # no document embedded again
    lexical = run_suite(folder, modes=["lexical"], index_path=path)  # no model asked for
    assert lexical.reused
    assert [s.metrics for s in lexical.scored] == [second.scored[0].metrics]
    # vectors from another build of the model: refused, nothing changed
    manifest = json.loads(manifest_path(path).read_text())
    manifest["fingerprint"] = "0000000000000000"
    manifest_path(path).write_text(json.dumps(manifest))
    with pytest.raises(InputError, match="another build of the embedding model"):
        run_suite(folder, modes=["dense"], embedder=spec(service), index_path=path)


def test_modes_are_checked() -> None:
    assert parse_modes("all") == ["lexical", "dense", "hybrid"]
    assert parse_modes("dense, lexical,dense") == ["dense", "lexical"]
    with pytest.raises(InputError):
        parse_modes(" , ")
    with pytest.raises(InputError, match="unknown mode"):
        settings_for(["sparse"], True)
    with pytest.raises(InputError, match="need vectors"):
        settings_for(["dense"], False)


def test_report_is_one_self_contained_page(folder: Path, service: EmbedServer) -> None:
    result = run_suite(
        folder, modes=["lexical", "dense", "hybrid"], embedder=spec(service), sweep=True
    )
    page = render_report(result)
    assert page.count('<img alt="') == 3
    assert page.count('src="data:image/png;base64,') == 3
    assert "http://" not in page and "https://" not in page and "<script" not in page
    for scored in result.scored:
        assert scored.setting.name in page
        assert f"{scored.metrics['ndcg@10']:.4f}" in page


def test_prf_expansion_scores_as_live_prf_search(folder: Path, service: EmbedServer) -> None:
    """`ragloom eval --expand prf`: every setting's lexical leg carries RM3 feedback, and the
    figures are those of live searches with `expand="prf"`."""
    modes = ["lexical", "hybrid"]
    plain = run_suite(folder, modes=modes, embedder=spec(service))
    result = run_suite(folder, modes=modes, embedder=spec(service), expand="prf")
    assert result.expand == "prf" and result.to_dict()["expand"] == "prf"
    assert [s.setting.name for s in result.scored] == [s.setting.name for s in plain.scored]
    dataset = load_beir(folder)
    with Index(live := folder.parent / "live-prf.db", embedder=spec(service)) as index:
        index.configure(EVAL_COLLECTION, **whole_document_config().to_dict())
        index.add(dataset.iter_corpus(), EVAL_COLLECTION)
        rows = index.chunk_documents(EVAL_COLLECTION)
        changed = 0
        for scored in result.scored:
            options = SearchOptions(**{**_fields(scored.setting.options), "expand": "prf"})
            run10 = {
                q: rank_documents(index, t, 10, rows, q, options)
                for q, t in dataset.queries.items()
            }
            top10 = evaluate_run(run10, dataset.qrels, 10, 10, 10)
            assert scored.metrics["ndcg@10"] == pytest.approx(top10["ndcg@10"])
            assert scored.metrics["mrr@10"] == pytest.approx(top10["mrr@10"])
            without = {
                q: rank_documents(index, t, 10, rows, q, scored.setting.options)
                for q, t in dataset.queries.items()
            }
            changed += sum(run10[q] != without[q] for q in run10)
    live.unlink()
    assert changed > 0  # the feedback terms moved some rankings
