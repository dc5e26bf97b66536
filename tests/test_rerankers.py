"""Rerankers: the ONNX cross-encoder against numpy, HTTP rerank services and the LLM
reranker against a local server speaking their protocols."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ragloom.errors import InputError, LLMFailed, RerankFailed, RerankOffline
from ragloom.llm import OpenAIChat
from ragloom.remote import Timeouts
from ragloom.rerank import resolve_reranker
from ragloom.rerank.http import CohereReranker, TEIReranker
from ragloom.rerank.llm import LLMReranker, parse_grade, parse_ranking
from ragloom.rerank.onnx import CrossEncoder
from tests import cross_encoder as ce
from tests.llm_server import LLMServer, free_port, overlap_score

FAST = Timeouts(connect=1.0, read=0.5, retry_delay=0.05, cooldown=0.0)
QUERY = "who forged the silver key"
DOCS = [
    "the river runs north to the sea",
    "Mira forged the silver key in the tower",
    "a silver ship",
    "the king and the queen of the north and the south met at the castle gate at night",
    "key",
]


def _ids(text: str) -> list[int]:
    vocab = {t: i for i, t in enumerate(ce.SPECIAL + ce.WORDS)}
    return [vocab.get(word, 1) for word in text.lower().split()]


def _expected(w: dict, query: str, doc: str, max_length: int) -> float:
    """Reference: ids built by hand, the passage cut so the pair fits `max_length`."""
    q, d = _ids(query), _ids(doc)
    while len(q) + len(d) + 3 > max_length:  # longest_first: trim the longer side
        if len(d) >= len(q):
            d = d[:-1]
        else:
            q = q[:-1]
    ids = [2, *q, 3, *d, 3]
    types = [0] * (len(q) + 2) + [1] * (len(d) + 1)
    return 1.0 / (1.0 + np.exp(-ce.reference_logit(w, ids, types)))


@pytest.fixture
def model_folder(tmp_path):
    folder = tmp_path / "tiny-ce"
    return folder, ce.build(folder, max_positions=16)


def test_cross_encoder_scores_equal_the_numpy_computation(model_folder):
    folder, w = model_folder
    model = CrossEncoder(folder, batch_size=2)  # batches mix lengths: padding must not count
    scores = model.score(QUERY, DOCS)
    expected = [_expected(w, QUERY, doc, 16) for doc in DOCS]
    np.testing.assert_allclose(scores, expected, rtol=1e-5, atol=1e-6)
    assert model.max_length == 16  # from config.json's max_position_embeddings
    assert scores[1] > scores[0]  # sharing the query's words beats sharing none


def test_cross_encoder_honours_a_shorter_configured_max_length(tmp_path):
    folder = tmp_path / "short"
    w = ce.build(folder, max_positions=16, max_length=9)
    model = CrossEncoder(folder)
    assert model.max_length == 9
    long_doc = "the silver key of the north tower and the gold ship"
    assert model.score(QUERY, [long_doc]) == pytest.approx([_expected(w, QUERY, long_doc, 9)])
    assert CrossEncoder(folder, max_length=12).max_length == 12  # an explicit length wins


def test_cross_encoder_without_truncation_fails_typed(tmp_path):
    folder = tmp_path / "unbounded"
    ce.build(folder, max_positions=16)
    (folder / "config.json").write_text(json.dumps({"model_type": "bert"}))  # limit unknown
    model = CrossEncoder(folder, max_length=64)  # the graph only has 16 positions
    assert model.score(QUERY, ["key"])  # short pairs fit
    with pytest.raises(RerankFailed, match="failed"):
        model.score(QUERY, ["the " * 40])


def test_cross_encoder_folder_errors(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        CrossEncoder(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="tokenizer.json"):
        CrossEncoder(tmp_path / "empty")
    ce.write_tokenizer(tmp_path / "empty" / "tokenizer.json")
    with pytest.raises(InputError, match="no single ONNX model"):
        CrossEncoder(tmp_path / "empty")


def test_onnx_spec_with_options(model_folder):
    folder, _ = model_folder
    model = resolve_reranker(f"onnx:{folder}?batch_size=3&max_length=12")
    assert isinstance(model, CrossEncoder)
    assert (model.batch_size, model.max_length) == (3, 12)


@pytest.fixture
def server():
    with LLMServer() as s:
        yield s


@pytest.mark.parametrize("provider", ["rerank", "cohere", "jina", "vllm", "infinity", "tei"])
def test_http_rerankers_map_scores_back_to_documents(server, provider):
    reranker = resolve_reranker(f"{provider}:bge-reranker-v2-m3@{server.url}")
    scores = reranker.score(QUERY, DOCS)
    assert scores == [overlap_score(QUERY, d) for d in DOCS]  # the server answers sorted
    path, body = server.requests[-1]
    if provider == "tei":
        assert path == "/rerank" and body["texts"] == DOCS
    else:
        assert path == "/v1/rerank"
        assert body["model"] == "bge-reranker-v2-m3" and body["top_n"] == len(DOCS)
        assert body["documents"] == DOCS and body["query"] == QUERY


def test_v1_rerank_base_url_may_end_in_v1(server):
    assert CohereReranker(server.url + "/v1", "m").score(QUERY, DOCS[:2])
    assert server.requests[-1][0] == "/v1/rerank"


@pytest.mark.parametrize("cls", [CohereReranker, TEIReranker])
@pytest.mark.parametrize("mode", ["500", "malformed", "hang"])
def test_http_reranker_failures_are_typed(server, cls, mode):
    server.mode, server.hang_seconds = mode, 1.5
    with pytest.raises(RerankFailed):
        cls(server.url, "m", timeouts=FAST).score(QUERY, DOCS)


def test_http_reranker_partial_answer_is_rejected(server):
    server.scorer = lambda q, d: 1.0
    reranker = CohereReranker(server.url, "m", timeouts=FAST)
    original = reranker._payload
    reranker._payload = lambda q, docs: {**original(q, docs), "top_n": 2}  # server drops 3
    with pytest.raises(RerankFailed, match="no score for 3 of 5"):
        reranker.score(QUERY, DOCS)


def test_http_reranker_refused_is_offline():
    reranker = TEIReranker(f"http://127.0.0.1:{free_port()}", "m", timeouts=FAST)
    with pytest.raises(RerankOffline):
        reranker.score(QUERY, DOCS)


def test_llm_listwise_reranker(server):
    server.replies = ['Here is my ranking:\n```json\n{"ranking": [2, "[5]", 2, 9]}\n```']
    reranker = LLMReranker(OpenAIChat(server.url, "m", timeouts=FAST), "listwise")
    scores = reranker.score(QUERY, DOCS)
    # 2 then 5 as ranked (the repeat and the unknown 9 ignored), then 1, 3, 4 in input order
    assert scores == [3 / 5, 5 / 5, 2 / 5, 1 / 5, 4 / 5]
    prompt = server.chat_requests()[-1]["messages"][0]["content"]
    assert "[1] the river runs north" in prompt and QUERY in prompt


def test_llm_pointwise_reranker_asks_about_each_passage(server):
    def grade(messages):
        passage = messages[0]["content"].split("Passage:\n", 1)[1]
        return json.dumps({"score": round(10 * overlap_score(QUERY, passage))})

    server.responder = grade
    reranker = resolve_reranker("llm:pointwise", llm=OpenAIChat(server.url, "m", timeouts=FAST))
    scores = reranker.score(QUERY, DOCS)
    assert scores == [round(10 * overlap_score(QUERY, d)) / 10 for d in DOCS]
    assert len(server.chat_requests()) == len(DOCS)


def test_llm_reranker_failures(server):
    llm = OpenAIChat(server.url, "m", timeouts=FAST)
    server.replies = ["I cannot rank these."]
    with pytest.raises(RerankFailed):
        LLMReranker(llm, "listwise").score(QUERY, DOCS)
    server.mode = "500"
    with pytest.raises(LLMFailed):
        LLMReranker(llm, "pointwise").score(QUERY, DOCS[:1])


@pytest.mark.parametrize(
    ("reply", "grade"),
    [('{"score": 7}', 0.7), ("8", 0.8), (" 10/10 ", 1.0), ('```json\n{"score": 0}\n```', 0.0)],
)
def test_parse_grade(reply, grade):
    assert parse_grade(reply) == grade


@pytest.mark.parametrize("reply", ['{"score": 11}', "very relevant", '{"score": "high"}', ""])
def test_parse_grade_refuses(reply):
    with pytest.raises(RerankFailed):
        parse_grade(reply)


def test_parse_ranking_accepts_a_bare_list_and_completes_it():
    assert parse_ranking("[3, 1]", 4) == [2, 0, 1, 3]
    with pytest.raises(RerankFailed):
        parse_ranking('{"ranking": [7, 8]}', 4)


def test_reranker_specs():
    assert resolve_reranker(None) is None
    with pytest.raises(InputError, match="needs an LLM"):
        resolve_reranker("llm")
    for bad in ("bogus", "onnx:", "tei:m", "rerank:m@http://h?x=1", "llm:sideways"):
        with pytest.raises(InputError):
            resolve_reranker(bad, llm=OpenAIChat("http://127.0.0.1:1", "m"))
