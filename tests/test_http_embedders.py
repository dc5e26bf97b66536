"""HTTP embedders against a real local server speaking each wire protocol: batching, the
shared remote-call rules (timeouts from the spec, one retry, typed errors), no dimension
probe, and Ollama's older `/api/embeddings` endpoint."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import numpy as np
import pytest

from ragloom import Document, Index
from ragloom.embedding import embedder_from_config, resolve_embedder
from ragloom.embedding.http import OllamaEmbedder, OpenAIEmbedder
from ragloom.embedding.resolve import check_spec
from ragloom.errors import EmbeddingOffline, EmbedFailed, InputError
from ragloom.remote import Timeouts

from .embed_server import DIMENSION, EmbedServer, fake_vector

FAST = {"retry_delay": 0.01, "cooldown": 0}


@pytest.fixture
def server():
    with EmbedServer() as srv:
        yield srv


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def unit(vector: list[float]) -> np.ndarray:
    array = np.asarray(vector)
    return array / np.linalg.norm(array)


@pytest.mark.parametrize("cls", [OpenAIEmbedder, OllamaEmbedder])
def test_batches_and_order(server: EmbedServer, cls):
    embedder = cls(server.url, "fake-model", batch_size=32, **FAST)
    texts = [f"text number {i} about lanterns" for i in range(70)]
    vectors = embedder.embed(texts)
    assert vectors.shape == (70, DIMENSION)
    assert len(server.requests) == 3  # 32 + 32 + 6, never one request per text
    assert [len(r["input"]) for r in server.requests] == [32, 32, 6]
    assert all(r["model"] == "fake-model" for r in server.requests)
    assert np.allclose(vectors[5], unit(fake_vector(texts[5])), atol=1e-6)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)


def test_openai_base_url_with_v1_and_bearer_key(server: EmbedServer, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-123")
    embedder = OpenAIEmbedder(server.url + "/v1/", "m", **FAST)
    embedder.embed(["hello"])
    assert server.paths == ["/v1/embeddings"]
    assert server.headers[0]["Authorization"] == "Bearer sk-test-123"
    assert embedder.dimension == DIMENSION


def test_one_retry_then_success(server: EmbedServer):
    server.mode = "fail_once"
    vectors = OllamaEmbedder(server.url, "m", **FAST).embed(["a b c"])
    assert vectors.shape == (1, DIMENSION) and len(server.requests) == 2


@pytest.mark.parametrize(
    ("mode", "message"),
    [("500", "answered 500"), ("malformed", "malformed"), ("wrong_count", "malformed")],
)
@pytest.mark.parametrize("cls", [OpenAIEmbedder, OllamaEmbedder])
def test_bad_answers_raise_embed_failed_after_one_retry(server: EmbedServer, cls, mode, message):
    server.mode = mode
    with pytest.raises(EmbedFailed, match=message) as info:
        cls(server.url, "m", **FAST).embed(["x"])
    assert info.value.code == "embed_failed"
    assert len(server.requests) == 2


def test_refused_connection_is_offline():
    with pytest.raises(EmbeddingOffline, match="cannot reach") as info:
        OllamaEmbedder(closed_port_url(), "m", **FAST).embed(["x"])
    assert info.value.code == "offline"


@pytest.mark.parametrize("cls", [OpenAIEmbedder, OllamaEmbedder])
def test_hung_service_query_waits_the_query_timeout_batch_the_read_timeout(
    server: EmbedServer, cls
):
    server.mode = "hang"
    embedder = cls(server.url, "m", timeout=1.2, query_timeout=0.2, **FAST)
    started = time.perf_counter()
    with pytest.raises(EmbedFailed, match="within 0.2 s"):
        embedder.embed_query("a question")
    query_wait = time.perf_counter() - started
    started = time.perf_counter()
    with pytest.raises(EmbedFailed, match="within 1.2 s"):
        embedder.embed(["a passage"])
    batch_wait = time.perf_counter() - started
    assert 0.4 <= query_wait < 1.2  # two tries of 0.2 s
    assert 2.4 <= batch_wait < 4.0  # two tries of 1.2 s
    assert len(server.requests) == 4


def test_spec_sets_timeouts_and_keeps_them_in_the_config(server: EmbedServer):
    spec = f"openai:m@{server.url}/v1?timeout=2&connect_timeout=1&query_timeout=3"
    check_spec(spec)
    embedder = resolve_embedder(spec)
    assert isinstance(embedder, OpenAIEmbedder)
    assert embedder.service.timeouts == Timeouts(connect=1.0, read=2.0, query=3.0)
    assert embedder.base_url == server.url
    rebuilt = embedder_from_config(embedder.config())
    assert rebuilt.service.timeouts == embedder.service.timeouts
    for bad in (f"openai:m@{server.url}?timeout=soon", f"ollama:m@{server.url}?colour=red"):
        with pytest.raises(InputError):
            check_spec(bad)
        with pytest.raises(InputError):
            resolve_embedder(bad)


def test_no_dimension_probe(server: EmbedServer):
    """The dimension is unknown until the first answer; asking for it, or for the config,
    never calls the service (a dead service must not take anything down)."""
    embedder = OllamaEmbedder(server.url, "m", **FAST)
    assert embedder.dimension is None
    assert embedder.config()["dimension"] is None
    dead = OpenAIEmbedder(closed_port_url(), "m", **FAST)
    assert dead.dimension is None and dead.config()["model"] == "m"
    assert server.requests == []
    embedder.embed_query("first answer")
    assert embedder.dimension == DIMENSION and embedder.config()["dimension"] == DIMENSION


@pytest.mark.parametrize("cls", [OpenAIEmbedder, OllamaEmbedder])
def test_wrong_dimension_is_embed_failed(server: EmbedServer, cls):
    embedder = cls(server.url, "m", **FAST)
    embedder.embed(["learns the dimension"])
    server.mode = "wrong_dim"
    with pytest.raises(EmbedFailed, match=f"expected {DIMENSION}"):
        embedder.embed_query("x")
    stated = cls(server.url, "m", dimension=384, **FAST)  # from a collection's config
    server.mode = "ok"
    with pytest.raises(EmbedFailed, match="expected 384"):
        stated.embed(["x"])


def test_ollama_falls_back_to_the_old_endpoint_and_remembers(server: EmbedServer):
    server.legacy_ollama = True
    embedder = OllamaEmbedder(server.url, "nomic", **FAST)
    texts = ["the silver key", "a lantern in the fog", "harbour bells"]
    vectors = embedder.embed(texts)
    assert np.allclose(vectors[1], unit(fake_vector(texts[1])), atol=1e-6)
    # one 404 on the new endpoint (not retried), then one request per text on the old one
    assert server.paths == ["/api/embed"] + ["/api/embeddings"] * 3
    assert server.requests[1] == {"model": "nomic", "prompt": texts[0]}
    query = embedder.embed_query("fog lantern")
    assert np.allclose(query, unit(fake_vector("fog lantern")), atol=1e-6)
    assert server.paths[4:] == ["/api/embeddings"]  # remembered: no second try of /api/embed


def test_ollama_new_endpoint_is_remembered_too(server: EmbedServer):
    embedder = OllamaEmbedder(server.url, "m", **FAST)
    embedder.embed(["a", "b"])
    server.mode = "500"
    with pytest.raises(EmbedFailed, match="answered 500"):
        embedder.embed(["c"])
    assert server.paths == ["/api/embed"] * 3  # a failing new endpoint is not a reason to fall back


@pytest.mark.parametrize("mode", ["500", "malformed"])
def test_ollama_old_endpoint_failures_are_typed(server: EmbedServer, mode):
    server.legacy_ollama = True
    server.mode = mode
    with pytest.raises(EmbedFailed) as info:
        OllamaEmbedder(server.url, "m", **FAST).embed(["x"])
    assert info.value.code == "embed_failed"


def test_ollama_old_endpoint_hung_and_refused(server: EmbedServer):
    server.legacy_ollama = True
    embedder = OllamaEmbedder(server.url, "m", query_timeout=0.2, **FAST)
    embedder.embed(["learns the endpoint"])
    server.mode = "hang"
    with pytest.raises(EmbedFailed, match="within 0.2 s"):
        embedder.embed_query("x")
    server.stop()
    with pytest.raises(EmbeddingOffline):
        embedder.embed_query("y")


def test_index_opens_and_searches_lexically_with_the_service_down(tmp_path: Path):
    path = tmp_path / "remote.db"
    docs = [Document("a", "the silver key opens the vault"), Document("b", "fog over harbour")]
    with EmbedServer() as server:
        url = server.url
        with Index(path, embedder=OllamaEmbedder(url, "m", **FAST)) as index:
            index.add(docs)
    # the service is gone; a fresh embedder (dimension unknown) is given explicitly
    down = OllamaEmbedder(url, "m", **FAST)
    with Index(path, embedder=down) as index:
        assert index.search("vault key", mode="lexical")[0].document_id == "a"
        assert down.dimension is None  # a lexical search never touches the model
        assert index.stats()["collections"]["default"]["embedding"]["dimension"] == DIMENSION
        hybrid = index.search("vault key")
        assert hybrid.degraded and hybrid.reason.startswith("offline")
        assert down.dimension == DIMENSION  # from the collection, not from a probe
        with pytest.raises(EmbeddingOffline):
            index.search("vault key", mode="dense")
    with EmbedServer() as server, Index(path, embedder=f"ollama:m@{server.url}") as index:
        assert index.search("silver vault", mode="dense")[0].document_id in {"a", "b"}


def test_new_collection_with_a_dead_service_is_created_without_calling_it(tmp_path: Path):
    with Index(tmp_path / "n.db", embedder=OpenAIEmbedder(closed_port_url(), "m", **FAST)) as index:
        assert list(index.search("anything", mode="lexical")) == []
        index.configure("notes")  # creating a collection stores the model, dimension unknown
        stored = index.stats()["collections"]["notes"]["embedding"]
        assert stored["model"] == "m" and stored["dimension"] is None
