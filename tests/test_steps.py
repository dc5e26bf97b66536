"""Expansion, rerank and multi-hop through `Index.search`, against a local server speaking
the LLM and rerank protocols (real SQLite index, real loopback HTTP)."""

from __future__ import annotations

import json

import pytest

import ragloom
from ragloom.errors import InputError, LLMFailed, LLMOffline, RerankFailed
from ragloom.llm import OpenAIChat
from ragloom.remote import Timeouts
from ragloom.timing import STAGES
from tests.embed_server import EmbedServer
from tests.llm_server import LLMServer, free_port

FAST = Timeouts(connect=1.0, read=1.0, retry_delay=0.05, cooldown=0.0)
DOCS = [
    ("key", "Mira forged the silver key in the north tower.", {"book": 1}),
    ("river", "The river Lune floods every spring and drowns the lower town.", {"book": 1}),
    ("gate", "The silver key opens the gate of the drowned city under the lake.", {"book": 2}),
    ("city", "Oskar once lived in the drowned city, before the flood took it.", {"book": 2}),
    ("forge", "Blacksmiths of the tower keep their forge burning day and night.", {"book": 1}),
    ("ship", "A ship with black sails waits in the harbour for the queen.", {"book": 3}),
]


def _add(index: ragloom.Index) -> None:
    index.add([ragloom.Document(id=i, text=t, title=i.title(), metadata=m) for i, t, m in DOCS])


@pytest.fixture
def server():
    with LLMServer() as s:
        yield s


@pytest.fixture
def llm(server):
    return OpenAIChat(server.url, "tiny", timeouts=FAST)


@pytest.fixture
def index(tmp_path, llm):
    with ragloom.Index(tmp_path / "i.db", embedder=None, llm=llm) as idx:
        _add(idx)
        yield idx


def test_no_request_unless_a_step_is_on(tmp_path, server, monkeypatch):
    monkeypatch.setenv("RAGLOOM_LLM", f"openai:m@{server.url}")
    monkeypatch.setenv("RAGLOOM_RERANKER", f"tei:m@{server.url}")
    with ragloom.Index(tmp_path / "i.db", embedder=None) as idx:
        _add(idx)
        hits = idx.search("silver key", top_k=3, explain=True, with_tokens=True)
        idx.context("silver key", budget=200)
        assert hits and server.requests == []
        assert hits.steps == {} and hits[0].rerank_score is None
        assert idx.search("silver key", rerank=True).steps["rerank"]["model"] == "tei:m"
        assert [p for p, _ in server.requests] == ["/rerank"]


def test_missing_services_are_input_errors(tmp_path, monkeypatch):
    monkeypatch.delenv("RAGLOOM_LLM", raising=False)
    monkeypatch.delenv("RAGLOOM_RERANKER", raising=False)
    with ragloom.Index(tmp_path / "i.db", embedder=None) as idx:
        _add(idx)
        for kwargs in ({"expand": "llm"}, {"hops": 2}, {"rerank": True}):
            with pytest.raises(InputError, match="needs"):
                idx.search("silver key", **kwargs)
        with pytest.raises(InputError, match="unknown expansion"):
            idx.search("silver key", expand="magic")


def test_llm_expansion_searches_every_variant_and_merges(index, server):
    server.replies = ['```json\n{"queries": ["drowned city", "flood", "drowned city"]}\n```']
    hits = index.search("where did Oskar live", expand="llm", top_k=6, explain=True)
    assert hits.variants == ["where did Oskar live", "drowned city", "flood"]
    assert hits.steps["expansion"] == {
        "method": "llm",
        "variants": hits.variants,
        "fallback": False,
    }
    assert not hits.degraded
    by_id = {h.document_id: h for h in hits}
    assert by_id["city"].rank == 1  # found by all three variants
    assert [v["variant"] for v in by_id["city"].explain["variants"]] == [0, 1, 2]
    assert "gate" in by_id and "river" in by_id  # found only through a variant
    assert [v["variant"] for v in by_id["gate"].explain["variants"]] == [1]
    prompt = server.chat_requests()[0]["messages"][0]["content"]
    assert "where did Oskar live" in prompt and "4" in prompt  # asks for max_variants - 1


def test_best_score_merge(index, server):
    server.replies = ['["drowned city"]']
    hits = index.search("Oskar", expand="llm", top_k=3, merge="best", max_variants=2)
    assert hits.variants == ["Oskar", "drowned city"]
    assert hits[0].document_id == "city"


@pytest.mark.parametrize(
    "reply", ["I'd rather not.", '{"queries": []}', '{"queries": ["where did Oskar live"]}']
)
def test_unusable_expansion_falls_back_to_the_original_flagged(index, server, reply):
    server.replies = [reply]
    hits = index.search("where did Oskar live", expand="llm", top_k=3)
    assert hits.variants == ["where did Oskar live"]
    assert hits.steps["expansion"]["fallback"] is True
    assert hits.degraded and "query expansion skipped" in hits.reason
    assert hits[0].document_id == "city"  # the original query still answers
    server.replies = [reply]
    with pytest.raises(LLMFailed):
        index.search("where did Oskar live", expand="llm", strict=True)


def test_failing_llm_degrades_expansion_or_raises_when_strict(index, server):
    server.mode = "500"
    hits = index.search("Oskar", expand="llm")
    assert hits.degraded and "llm_failed" in hits.reason and hits[0].document_id == "city"
    with pytest.raises(LLMFailed):
        index.search("Oskar", expand="llm", strict=True)


def test_refused_llm_is_offline(tmp_path):
    llm = OpenAIChat(f"http://127.0.0.1:{free_port()}", "m", timeouts=FAST)
    with ragloom.Index(tmp_path / "i.db", embedder=None, llm=llm) as idx:
        _add(idx)
        hits = idx.search("Oskar", expand="llm")
        assert hits.degraded and hits.reason.startswith("query expansion skipped: offline")
        with pytest.raises(LLMOffline):
            idx.search("Oskar", expand="llm", strict=True)


def test_variants_are_embedded_in_one_call(tmp_path, server):
    with EmbedServer() as embed:
        spec = f"openai:fake@{embed.url}"
        llm = OpenAIChat(server.url, "m", timeouts=FAST)
        with ragloom.Index(tmp_path / "i.db", embedder=spec, llm=llm) as idx:
            _add(idx)
            before = len(embed.requests)
            server.replies = ['{"queries": ["drowned city", "flood waters"]}']
            hits = idx.search("Oskar home", expand="llm", mode="hybrid", top_k=3)
            assert hits.mode == "hybrid" and not hits.degraded
            calls = embed.requests[before:]
            assert [c["input"] for c in calls] == [["Oskar home", "drowned city", "flood waters"]]
            embed.mode = "500"
            server.replies = ['{"queries": ["harbour ship"]}']
            hits = idx.search("queen sails", expand="llm", top_k=3)
            assert hits.degraded and "embed_failed" in hits.reason and hits.mode == "hybrid"
            assert hits[0].document_id == "ship"


def test_http_rerank_orders_the_head_and_keeps_provenance(tmp_path, server):
    with ragloom.Index(
        tmp_path / "i.db", embedder=None, reranker=f"rerank:bge@{server.url}"
    ) as idx:
        _add(idx)
        fused = idx.search("silver key drowned city", top_k=10)
        hits = idx.search(
            "silver key drowned city", top_k=2, rerank=True, rerank_depth=3, explain=True
        )
        _, body = server.requests[-1]
        assert body["documents"] == [f"{h.title}\n{h.text}" for h in fused[:3]]  # best 3 only
        scores = [h.rerank_score for h in hits]
        assert scores == sorted(scores, reverse=True) and hits[0].score == scores[0]
        assert hits[0].document_id == "gate"  # all four words; the server scores overlap
        step = hits[0].explain["rerank"]
        assert step["model"] == "rerank:bge" and step["score"] == scores[0]
        assert step["rank_before"] >= 1
        assert hits.steps["rerank"] == {"model": "rerank:bge", "candidates": 3, "degraded": False}


def test_rerank_failure_keeps_the_fused_order(tmp_path, server):
    reranker = ragloom.rerank.http.CohereReranker(server.url, "m", timeouts=FAST)
    with ragloom.Index(tmp_path / "i.db", embedder=None) as idx:
        _add(idx)
        plain = idx.search("silver key", top_k=3)
        server.mode = "500"
        hits = idx.search("silver key", top_k=3, rerank=reranker)
        assert [h.chunk_id for h in hits] == [h.chunk_id for h in plain]
        assert [h.score for h in hits] == [h.score for h in plain]
        assert hits.degraded and hits.reason.startswith("rerank skipped: rerank_failed")
        assert hits.steps["rerank"]["degraded"] is True and hits[0].rerank_score is None
        with pytest.raises(RerankFailed):
            idx.search("silver key", top_k=3, rerank=reranker, strict=True)


def test_onnx_rerank_through_the_index(tmp_path):
    from ragloom.rerank.onnx import CrossEncoder
    from tests import cross_encoder as ce

    ce.build(tmp_path / "ce", max_positions=32)
    with ragloom.Index(tmp_path / "i.db", embedder=None) as idx:
        _add(idx)
        hits = idx.search("silver key", top_k=3, rerank=f"onnx:{tmp_path / 'ce'}")
        model = CrossEncoder(tmp_path / "ce")
        expected = model.score("silver key", [f"{h.title}\n{h.text}" for h in hits])
        assert [h.rerank_score for h in hits] == pytest.approx(expected)
        assert expected == sorted(expected, reverse=True)


def test_llm_listwise_rerank(index, server):
    server.replies = ['{"ranking": [2, 1]}']
    hits = index.search("silver key", top_k=2, rerank="llm:listwise")
    assert hits.steps["rerank"]["model"] == "llm-listwise:openai:tiny"
    plain = index.search("silver key", top_k=2)
    assert [h.chunk_id for h in hits] == [plain[1].chunk_id, plain[0].chunk_id]


def _decision(sufficient: bool, follow_up: str = "") -> str:
    return json.dumps({"sufficient": sufficient, "follow_up_query": follow_up})


def test_multi_hop_follows_up_until_sufficient(index, server):
    server.replies = [_decision(False, "drowned city Oskar"), _decision(True)]
    hits = index.search("what does the silver key open", top_k=1, hops=3, explain=True)
    trace = hits.trace
    assert [t["query"] for t in trace] == ["what does the silver key open", "drowned city Oskar"]
    assert trace[0]["new_chunk_ids"] == [hits[0].chunk_id] and trace[0]["hop"] == 1
    assert trace[1]["new_chunk_ids"] and trace[1]["hop"] == 2
    assert trace[0]["decision"] == {"sufficient": False, "follow_up_query": "drowned city Oskar"}
    assert hits.steps["hops"]["stopped"] == "sufficient"
    assert [h.hop for h in hits] == [1, 2]  # accumulated, in the order found
    assert hits[1].explain["hop"] == 2
    second = server.chat_requests()[1]["messages"][0]["content"]
    assert "[1]" in second and "[2]" in second  # the LLM saw both hops' passages


@pytest.mark.parametrize(
    ("replies", "stopped", "hops"),
    [
        ([_decision(False, "tower forge"), _decision(False, "harbour ship")], "hop_limit", 3),
        (["maybe?"], "unparseable", 1),
        ([_decision(False, "")], "no_follow_up", 1),
        ([_decision(False, "the silver key")], "no_new_chunks", 2),
    ],
)
def test_multi_hop_stops(index, server, replies, stopped, hops):
    server.replies = list(replies)
    hits = index.search("silver key", top_k=2, hops=3)
    assert hits.steps["hops"]["stopped"] == stopped
    assert len(hits.trace) == hops
    assert not hits.degraded
    ids = [h.chunk_id for h in hits]
    assert len(ids) == len(set(ids))  # de-duplicated


def test_multi_hop_keeps_filters_and_degrades_when_the_llm_fails(index, server):
    server.replies = [_decision(False, "harbour ship queen")]
    hits = index.search("silver key", top_k=2, hops=2, filters={"book": {"$lte": 2}})
    assert hits.steps["hops"]["stopped"] == "no_new_chunks"  # the ship is in book 3
    assert hits.trace[1]["new_chunk_ids"] == [] and "ship" not in {h.document_id for h in hits}
    server.replies = [_decision(False, "harbour ship queen")]
    hits = index.search("silver key", top_k=2, hops=2)
    assert hits.steps["hops"]["stopped"] == "hop_limit" and hits.trace[1]["new_chunk_ids"]
    server.mode = "500"
    hits = index.search("silver key", top_k=2, hops=3)
    assert hits.steps["hops"]["stopped"] == "llm_failed" and hits.degraded
    with pytest.raises(LLMFailed):
        index.search("silver key", top_k=2, hops=3, strict=True)


def test_multi_hop_reranks_the_accumulated_chunks_against_the_question(tmp_path, server, llm):
    with ragloom.Index(
        tmp_path / "i.db", embedder=None, llm=llm, reranker=f"tei:m@{server.url}"
    ) as idx:
        _add(idx)
        server.replies = [_decision(False, "harbour ship")]
        hits = idx.search("silver key gate", top_k=1, hops=2, rerank=True)
        assert len(hits) == 2 and hits.steps["rerank"]["candidates"] == 2
        rerank_body = [b for p, b in server.requests if p == "/rerank"][-1]
        assert rerank_body["query"] == "silver key gate"
        assert hits[0].rerank_score >= hits[1].rerank_score


def test_prf_expansion_and_total_tokens(index):
    plain = index.search("silver key", top_k=6, with_tokens=True)
    assert plain.total_tokens == sum(h.tokens for h in plain) > 0
    expanded = index.search("silver key", top_k=6, expand="prf", with_tokens=True)
    assert expanded.steps["expansion"]["method"] == "prf" and not expanded.degraded
    assert expanded.total_tokens == sum(h.tokens for h in expanded)
    assert {h.document_id for h in expanded} >= {h.document_id for h in plain}


def test_timings_count_the_service_steps(index, server):
    """The LLM calls are their own stages (`expand`, `hops`), not hidden in `other`."""
    server.mode, server.hang_seconds = "hang", 0.3  # each chat answer takes 300 ms
    server.replies = ['["drowned city"]', _decision(True)]
    hits = index.search("where did Oskar live", expand="llm", max_variants=2, hops=2)
    timings = hits.timings
    assert hits.variants == ["where did Oskar live", "drowned city"] and not hits.degraded
    assert timings["expand"] >= 300 and timings["hops"] >= 300
    assert timings["other"] < 300  # neither LLM call counted here
    assert sum(v for k, v in timings.items() if k != "total") == pytest.approx(
        timings["total"], abs=1.0
    )
    assert list(timings) == sorted(timings, key=lambda k: (*STAGES, "total").index(k))
