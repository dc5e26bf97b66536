"""HTTP embedders against a real local server speaking each wire protocol."""

from __future__ import annotations

import inspect
import socket

import numpy as np
import pytest

from ragloom.embedding.http import HttpEmbedder, OllamaEmbedder, OpenAIEmbedder
from ragloom.errors import EmbeddingOffline, EmbedFailed

from .embed_server import DIMENSION, EmbedServer, fake_vector


@pytest.fixture
def server():
    with EmbedServer() as srv:
        yield srv


@pytest.mark.parametrize("cls", [OpenAIEmbedder, OllamaEmbedder])
def test_batches_and_order(server: EmbedServer, cls):
    embedder = cls(server.url, "fake-model", batch_size=32, retry_delay=0.01)
    texts = [f"text number {i} about lanterns" for i in range(70)]
    vectors = embedder.embed(texts)
    assert vectors.shape == (70, DIMENSION)
    assert len(server.requests) == 3  # 32 + 32 + 6, never one request per text
    assert [len(r["input"]) for r in server.requests] == [32, 32, 6]
    assert all(r["model"] == "fake-model" for r in server.requests)
    expected = np.asarray(fake_vector(texts[5]))
    assert np.allclose(vectors[5], expected / np.linalg.norm(expected), atol=1e-6)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)


def test_openai_base_url_with_v1_and_bearer_key(server: EmbedServer, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-123")
    embedder = OpenAIEmbedder(server.url + "/v1/", "m", retry_delay=0.01)
    embedder.embed(["hello"])
    assert server.headers[0]["Authorization"] == "Bearer sk-test-123"
    assert embedder.dimension == DIMENSION


def test_one_retry_then_success(server: EmbedServer):
    server.mode = "fail_once"
    vectors = OllamaEmbedder(server.url, "m", retry_delay=0.01).embed(["a b c"])
    assert vectors.shape == (1, DIMENSION) and len(server.requests) == 2


@pytest.mark.parametrize(
    ("mode", "message"),
    [("500", "answered 500"), ("malformed", "malformed"), ("wrong_count", "malformed")],
)
@pytest.mark.parametrize("cls", [OpenAIEmbedder, OllamaEmbedder])
def test_bad_answers_raise_embed_failed_after_one_retry(server: EmbedServer, cls, mode, message):
    server.mode = mode
    with pytest.raises(EmbedFailed, match=message) as info:
        cls(server.url, "m", retry_delay=0.01).embed(["x"])
    assert info.value.code == "embed_failed"
    assert len(server.requests) == 2


def test_timeout_is_embed_failed(server: EmbedServer):
    server.mode = "slow"
    with pytest.raises(EmbedFailed, match="timed out"):
        OpenAIEmbedder(server.url, "m", timeout=0.3, retry_delay=0.01).embed(["x"])


def test_closed_port_is_offline():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(EmbeddingOffline, match="cannot reach") as info:
        OllamaEmbedder(f"http://127.0.0.1:{port}", "m", retry_delay=0.01).embed(["x"])
    assert info.value.code == "offline"


def test_dimension_mismatch_is_embed_failed(server: EmbedServer):
    with pytest.raises(EmbedFailed, match="expected 384"):
        OllamaEmbedder(server.url, "m", dimension=384, retry_delay=0.01).embed(["x"])


def test_default_retry_delay_is_one_second():
    assert inspect.signature(HttpEmbedder.__init__).parameters["retry_delay"].default == 1.0
