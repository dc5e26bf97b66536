"""Dense and hybrid retrieval through the Index, with the real local model and real HTTP."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ragloom import Document, Index, InputError
from ragloom.embedding.http import OllamaEmbedder
from ragloom.embedding.local import LocalEmbedder
from ragloom.errors import EmbeddingMismatch, EmbeddingOffline

from .embed_server import EmbedServer

DOCS = [
    Document("fetch", "Use safeFetch(url) to download a page with retries and a timeout."),
    Document("cats", "Felines sleep for most of the day and hunt at dusk."),
    Document("rain", "Precipitation was heavy across the northern valleys this autumn."),
    Document("bread", "Knead the dough, let it rise overnight, then bake it until golden."),
    Document("ships", "The harbour master records every vessel that docks at the pier."),
]


class CountingEmbedder(LocalEmbedder):
    """The real local model, counting how many texts it was asked to embed."""

    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []

    def embed(self, texts):
        self.texts.extend(texts)
        return super().embed(texts)


@pytest.fixture(scope="module")
def local() -> CountingEmbedder:
    return CountingEmbedder()


def test_local_model_vectors_are_unit_length_and_semantic(local: CountingEmbedder):
    vectors = local.embed(["a kitten naps", "cats sleep", "stock market crash"])
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2] + 0.2
    # batching and length sorting do not change a text's vector
    alone = local.embed(["cats sleep"])[0]
    assert np.allclose(alone, vectors[1], atol=1e-5)


def test_hybrid_finds_paraphrases_and_identifiers(locate, local: CountingEmbedder):
    with Index(locate("h"), embedder=local) as index:
        index.add(DOCS)
        assert index.stats()["collections"]["default"]["vectors"] == len(DOCS)

        dense = index.search("when do cats nap", top_k=1, mode="dense")
        assert dense[0].document_id == "cats" and dense[0].match == "dense"
        assert dense.mode == "dense" and not dense.degraded

        assert index.search("when do cats nap", top_k=2, mode="lexical") == []  # no shared word
        hybrid = index.search("how much did it rain this year", top_k=3)
        assert hybrid.mode == "hybrid" and hybrid[0].document_id == "rain"
        assert hybrid[0].match == "dense" and hybrid[0].dense_score >= hybrid.dense_floor

        ident = index.search("safeFetch", top_k=3, fusion="rrf")
        assert ident[0].document_id == "fetch" and ident[0].match in ("lexical", "both")
        assert ident[0].lexical_rank == 1
        both = [h for h in ident if h.match == "both"]
        assert all(h.lexical_rank and h.dense_rank for h in both)
        weighted = index.search("safeFetch", top_k=3, fusion="weighted")
        assert weighted[0].document_id == "fetch"


def test_weak_dense_only_hits_are_dropped(locate, local: CountingEmbedder):
    with Index(locate("w"), embedder=local) as index:
        index.add(DOCS)
        strict = index.search("quantum chromodynamics lattice", top_k=5)
        loose = index.search("quantum chromodynamics lattice", top_k=5, min_dense_similarity=-1)
    assert strict == [] and len(loose) == 5


def test_only_new_or_changed_chunks_are_embedded(locate, local: CountingEmbedder):
    text = "\n\n".join(
        f"Paragraph {i}: the {w} lantern hangs by the door." for i, w in enumerate("abc")
    )
    with Index(locate("c"), embedder=local) as index:
        index.configure(chunking={"max_chars": 50, "overlap": 0, "min_chars": 5})
        local.texts.clear()
        index.add([Document("lamp", text)])
        assert len(local.texts) == 3
        local.texts.clear()
        index.add([Document("lamp", text)])
        assert local.texts == []  # unchanged document: nothing embedded
        index.add([Document("lamp", text.replace("the c lantern", "the copper lantern"))])
        assert local.texts == ["Paragraph 2: the copper lantern hangs by the door."]


def test_vectors_survive_reopen_and_delete_cleans_them(locate, local: CountingEmbedder):
    path = locate("r")
    with Index(path, embedder=local) as index:
        index.add(DOCS)
        before = [(h.chunk_id, round(h.score, 6)) for h in index.search("baking bread", top_k=3)]
    with Index(path) as index:  # "auto": the collection's own model
        after = [(h.chunk_id, round(h.score, 6)) for h in index.search("baking bread", top_k=3)]
        assert after == before
        index.delete("bread")
        assert all(h.document_id != "bread" for h in index.search("baking bread", top_k=5))
        assert index.stats()["collections"]["default"]["vectors"] == len(DOCS) - 1
        assert index.check() == []


def test_collection_refuses_another_model(locate, local: CountingEmbedder):
    path = locate("m")
    with Index(path, embedder=local) as index:
        index.add(DOCS)
    with EmbedServer() as server:
        other = OllamaEmbedder(server.url, "other-model", retry_delay=0.01)
        with pytest.raises(EmbeddingMismatch, match="all-MiniLM-L6-v2") as info:
            Index(path, embedder=other).search("bread")
        assert "reembed" in str(info.value)
        with Index(path, embedder=None) as lexical_only:  # searching lexically still works
            assert lexical_only.search("dough", mode="lexical")[0].document_id == "bread"
            with pytest.raises(EmbeddingMismatch, match="without an embedding model"):
                lexical_only.add([Document("x", "new text")])
        with Index(path) as index:
            assert index.reembed(embedder=other) == len(DOCS)
        with Index(path, embedder=other) as index:
            assert index.search("dough rise overnight bake", top_k=1)[0].document_id == "bread"
            assert index.stats()["collections"]["default"]["embedding"]["model"] == "other-model"


def test_lexical_collection_needs_reembed_for_a_model(locate, local: CountingEmbedder):
    path = locate("l")
    with Index(path, embedder=None) as index:
        index.add(DOCS)
    with pytest.raises(EmbeddingMismatch, match="without vectors"):
        Index(path, embedder=local).search("cats")
    with Index(path) as index:
        assert index.search("cats").mode == "lexical"
        with pytest.raises(InputError, match="needs vectors"):
            index.search("cats", mode="dense")
        index.reembed(embedder=local)
        assert index.search("when do cats nap", top_k=1)[0].document_id == "cats"


def test_an_empty_lexical_collection_gains_the_model_with_its_first_write(
    locate, local: CountingEmbedder
):
    """The model is stored in the first write's own transaction: the write's chunks are in
    the view with their vectors, and the collection's config names the model, at once and
    after reopening."""
    path = locate("g")
    with Index(path, embedder=None) as index:
        index.configure("notes", title_weight=2)
        assert index.stats()["collections"]["notes"]["embedding"] is None
    with Index(path, embedder=local) as index:
        report = index.add(DOCS, collection="notes")
        assert (report.documents, report.embedded, report.pending) == (len(DOCS), len(DOCS), 0)
        found = index.search("when do cats nap", collection="notes", mode="dense", top_k=1)
        assert found[0].document_id == "cats"
        assert index.check() == []
    with Index(path) as index:  # "auto": the model the collection now stores
        stats = index.stats()["collections"]["notes"]
        assert stats["embedding"]["model"] == local.name
        assert stats["vectors"] == len(DOCS)
        assert stats["config"]["title_weight"] == 2  # its settings kept beside the model
        assert (
            index.search("when do cats nap", collection="notes", mode="dense", top_k=1)[
                0
            ].document_id
            == "cats"
        )


def test_hybrid_degrades_to_bm25_when_the_service_is_down(locate):
    server = EmbedServer().__enter__()
    embedder = OllamaEmbedder(server.url, "fake", retry_delay=0.01)
    with Index(locate("d"), embedder=embedder) as index:
        index.add(DOCS)
        assert index.search("harbour vessel", top_k=1).degraded is False
        server.stop()
        result = index.search("knead the dough", top_k=2)
        assert result.degraded and result.reason.startswith("offline")
        assert result[0].document_id == "bread" and result[0].match == "lexical"
        with pytest.raises(EmbeddingOffline):
            index.search("bread dough", strict=True)
        with pytest.raises(EmbeddingOffline):
            index.search("bread dough", mode="dense")


def test_search_option_errors(locate, local: CountingEmbedder):
    with Index(locate("o"), embedder=local) as index:
        index.add(DOCS)
        for kwargs, message in [
            ({"mode": "fuzzy"}, "unknown mode"),
            ({"fusion": "max"}, "unknown fusion"),
            ({"normalization": "l2"}, "normalization"),
            ({"weights": {"dense": "a lot"}}, "non-negative"),
            ({"candidates": 0}, "candidates"),
            ({"min_dense_similarity": 3}, "min_dense_similarity must be at most 1"),
        ]:
            with pytest.raises(InputError, match=message):
                index.search("cats", **kwargs)


@pytest.mark.parametrize("query", ["", " ", "\n\t  "])
@pytest.mark.parametrize("mode", ["lexical", "dense", "hybrid"])
def test_empty_or_blank_queries_give_no_hits_in_every_mode(
    tmp_path: Path, local: CountingEmbedder, mode: str, query: str
):
    # Dense search used to rank every chunk at cosine 0.0 for an empty query.
    with Index(tmp_path / "e.db", embedder=local) as index:
        index.add(DOCS)
        asked = len(local.texts)
        hits = index.search(query, top_k=3, mode=mode)
        assert list(hits) == [] and not hits.degraded
        many = index.search_many(query, [{"collection": "default", "mode": mode}])
        assert many.merged == []
        assert len(local.texts) == asked  # nothing was embedded for it


def test_a_dense_search_never_splits_the_query_into_terms(tmp_path: Path, local, monkeypatch):
    """Only the lexical leg (and its BM25 ceiling) reads the query's terms: a dense search
    leaves them unparsed (a long question's terms cost microseconds on every search)."""
    from ragloom.text.tokenize import Tokenizer

    query = "when do cats nap in the afternoon sun"
    seen: list[str] = []
    original = Tokenizer.terms
    monkeypatch.setattr(
        Tokenizer, "terms", lambda self, text: seen.append(text) or original(self, text)
    )
    with Index(tmp_path / "d.db", embedder=local) as index:
        index.add(DOCS)
        seen.clear()
        assert index.search(query, top_k=1, mode="dense")[0].document_id == "cats"
        assert query not in seen
        assert index.search(query, top_k=1, mode="hybrid")[0].document_id == "cats"
        assert seen.count(query) == 1  # the lexical leg and its ceiling share one parse
