"""LLM clients over real loopback HTTP: both protocols, timeouts, retry, typed errors."""

from __future__ import annotations

import time

import pytest

from ragloom.errors import InputError, LLMFailed, LLMOffline
from ragloom.llm import OllamaChat, OpenAIChat, extract_json, resolve_llm
from ragloom.remote import Timeouts
from tests.llm_server import LLMServer, free_port

FAST = Timeouts(connect=1.0, read=0.5, retry_delay=0.05, cooldown=0.0)


@pytest.fixture
def server():
    with LLMServer() as s:
        yield s


@pytest.mark.parametrize("provider", ["openai", "ollama"])
def test_chat_round_trip_on_both_protocols(server, provider):
    server.responder = lambda messages: "echo: " + messages[-1]["content"]
    llm = resolve_llm(f"{provider}:tiny@{server.url}")
    assert llm.chat([{"role": "user", "content": "hello"}]) == "echo: hello"
    path, body = server.requests[-1]
    assert path == ("/v1/chat/completions" if provider == "openai" else "/api/chat")
    assert body["model"] == "tiny"
    assert body["messages"] == [{"role": "user", "content": "hello"}]
    if provider == "ollama":
        assert body["stream"] is False and body["options"]["temperature"] == 0
    else:
        assert body["temperature"] == 0


def test_openai_base_url_may_end_in_v1_and_key_comes_from_the_environment(server, monkeypatch):
    monkeypatch.setenv("RAGLOOM_LLM_API_KEY", "sk-test")
    server.responder = lambda messages: "ok"
    llm = resolve_llm(f"openai:m@{server.url}/v1")
    assert llm.chat([{"role": "user", "content": "x"}]) == "ok"
    assert server.requests[-1][0] == "/v1/chat/completions"
    assert server.headers[-1]["Authorization"] == "Bearer sk-test"


def test_spec_from_environment_and_none(monkeypatch, server):
    monkeypatch.delenv("RAGLOOM_LLM", raising=False)
    assert resolve_llm(None) is None
    monkeypatch.setenv("RAGLOOM_LLM", f"ollama:m@{server.url}?timeout=7")
    llm = resolve_llm(None)
    assert isinstance(llm, OllamaChat)
    assert llm.service.timeouts.read == 7.0
    assert server.requests == []  # building a client makes no request


@pytest.mark.parametrize(
    "spec",
    ["gpt:m@http://h", "openai:@http://h", "openai:m", "openai:m@ftp://h", "openai:m@http://h?x=1"],
)
def test_bad_specs_are_input_errors(spec):
    with pytest.raises(InputError):
        resolve_llm(spec)


def test_refused_connection_is_offline():
    llm = OpenAIChat(f"http://127.0.0.1:{free_port()}", "m", timeouts=FAST)
    with pytest.raises(LLMOffline) as caught:
        llm.chat([{"role": "user", "content": "x"}])
    assert caught.value.code == "offline"


@pytest.mark.parametrize("mode", ["500", "malformed"])
def test_bad_answers_are_llm_failed_after_one_retry(server, mode):
    server.mode = mode
    llm = OllamaChat(server.url, "m", timeouts=FAST)
    with pytest.raises(LLMFailed) as caught:
        llm.chat([{"role": "user", "content": "x"}])
    assert caught.value.code == "llm_failed"
    assert len(server.requests) == 2


def test_one_failure_is_retried(server):
    server.mode = "fail_once"
    server.responder = lambda messages: "fine"
    assert OpenAIChat(server.url, "m", timeouts=FAST).chat([{"role": "user", "content": "x"}])
    assert len(server.requests) == 2


def test_hung_service_fails_within_the_read_timeout(server):
    server.mode, server.hang_seconds = "hang", 20.0
    llm = OpenAIChat(server.url, "m", timeouts=FAST)
    started = time.monotonic()
    with pytest.raises(LLMFailed, match="did not answer within 0.5 s"):
        llm.chat([{"role": "user", "content": "x"}])
    assert time.monotonic() - started < 10  # 2 x 0.5 s + 0.05 s, not the 20 s hang


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ('```json\n{"a": [1, 2]}\n```', {"a": [1, 2]}),
        ('Sure! Here you go:\n```\n["x", "y"]\n```\nHope that helps.', ["x", "y"]),
        ('The answer is {"sufficient": true} as requested.', {"sufficient": True}),
        ('Passage [2] matters. {"ranking": [2, 1]}', {"ranking": [2, 1]}),
    ],
)
def test_extract_json_finds_the_value(reply, expected):
    kinds = (dict,) if "ranking" in reply else (dict, list)
    assert extract_json(reply, kinds) == expected


@pytest.mark.parametrize("reply", ["no json here", '{"a": 1', "", "```json\n{bad}\n```"])
def test_extract_json_refuses_replies_without_json(reply):
    with pytest.raises(ValueError):
        extract_json(reply)
