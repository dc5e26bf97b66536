"""Streamed chat answers and tool calls over real loopback HTTP, on both protocols: OpenAI's
server-sent events and Ollama's NDJSON; a service that errors, stalls or breaks off."""

from __future__ import annotations

import json
import time

import pytest

from ragloom.errors import LLMFailed, LLMOffline
from ragloom.llm import ChatReply, OllamaChat, OpenAIChat
from ragloom.llm.stream import ollama_messages
from ragloom.remote import Timeouts
from tests.llm_server import LLMServer, free_port, pieces

FAST = Timeouts(connect=1.0, read=0.5, retry_delay=0.05, cooldown=0.0)
CLIENTS = {"openai": OpenAIChat, "ollama": OllamaChat}
TOOL = {
    "type": "function",
    "function": {"name": "search", "description": "Search.", "parameters": {"type": "object"}},
}


@pytest.fixture
def server():
    with LLMServer() as s:
        yield s


def _collect(events) -> tuple[list[str], ChatReply]:
    texts = []
    reply = None
    for event in events:
        if isinstance(event, str):
            texts.append(event)
        else:
            reply = event
    assert isinstance(reply, ChatReply)
    return texts, reply


@pytest.mark.parametrize("provider", ["openai", "ollama"])
def test_text_arrives_in_pieces_and_the_reply_holds_all_of_it(server, provider):
    text = "The key opens the gate [1] and the bell rings [2]."
    server.replies = [text]
    llm = CLIENTS[provider](server.url, "tiny", timeouts=FAST)
    texts, reply = _collect(llm.stream([{"role": "user", "content": "q"}]))
    assert len(texts) == len(pieces(text)) > 5
    assert "".join(texts) == reply.content == text
    assert reply.tool_calls == [] and reply.finish_reason == "stop"
    path, body = server.requests[-1]
    assert body["stream"] is True and body["model"] == "tiny"
    assert "tools" not in body


@pytest.mark.parametrize("provider", ["openai", "ollama"])
def test_tool_calls_come_back_in_openai_shape(server, provider):
    arguments = {"query": "silver key", "top_k": 3}
    server.replies = [{"content": "", "tool_calls": [{"name": "search", "arguments": arguments}]}]
    llm = CLIENTS[provider](server.url, "tiny", timeouts=FAST)
    texts, reply = _collect(llm.stream([{"role": "user", "content": "q"}], tools=[TOOL]))
    assert texts == []
    (call,) = reply.tool_calls
    assert call["type"] == "function" and call["id"]
    assert call["function"]["name"] == "search"
    assert json.loads(call["function"]["arguments"]) == arguments
    assert server.requests[-1][1]["tools"] == [TOOL]
    assert reply.message()["tool_calls"] == [call]


def test_ollama_gets_tool_turns_in_its_own_shape(server):
    """A tool call's arguments go to Ollama as an object and a tool result names its tool."""
    call = {"id": "c1", "type": "function", "function": {"name": "search", "arguments": '{"a": 1}'}}
    messages = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "{}"},
    ]
    server.replies = ["done"]
    _collect(OllamaChat(server.url, "m", timeouts=FAST).stream(messages))
    sent = server.requests[-1][1]["messages"]
    assert sent[1]["tool_calls"] == [{"function": {"name": "search", "arguments": {"a": 1}}}]
    assert sent[2] == {"role": "tool", "content": "{}", "tool_name": "search"}
    assert ollama_messages(messages)[0] == messages[0]


@pytest.mark.parametrize("provider", ["openai", "ollama"])
@pytest.mark.parametrize("mode", ["500", "malformed"])
def test_a_bad_answer_is_retried_once_then_llm_failed(server, provider, mode):
    server.mode = mode
    llm = CLIENTS[provider](server.url, "m", timeouts=FAST)
    with pytest.raises(LLMFailed) as caught:
        _collect(llm.stream([{"role": "user", "content": "q"}]))
    assert caught.value.code == "llm_failed"
    assert len(server.chat_requests()) == 2


def test_one_failure_before_the_stream_is_retried(server):
    server.mode = "fail_once"
    server.replies = ["fine"]
    texts, reply = _collect(
        OpenAIChat(server.url, "m", timeouts=FAST).stream([{"role": "user", "content": "q"}])
    )
    assert reply.content == "fine" and len(server.chat_requests()) == 2


@pytest.mark.parametrize("provider", ["openai", "ollama"])
def test_a_hung_model_fails_within_its_budget(server, provider):
    server.mode, server.hang_seconds = "hang", 2.0
    llm = CLIENTS[provider](server.url, "m", timeouts=FAST)
    started = time.monotonic()
    with pytest.raises(LLMFailed, match="silent for 0.5 s"):
        _collect(llm.stream([{"role": "user", "content": "q"}], budget=0.5))
    assert time.monotonic() - started < 1.5  # one wait of 0.5 s: no retry past the budget


@pytest.mark.parametrize("provider", ["openai", "ollama"])
@pytest.mark.parametrize("mode", ["stall", "cut"])
def test_a_stream_that_breaks_off_keeps_what_came_and_fails(server, provider, mode):
    server.mode, server.hang_seconds, server.stall_after = mode, 2.0, 3
    server.replies = ["one two three four five six"]
    llm = CLIENTS[provider](server.url, "m", timeouts=FAST)
    texts = []
    with pytest.raises(LLMFailed):
        for event in llm.stream([{"role": "user", "content": "q"}]):
            texts.append(event)
    assert "".join(texts) == "one two three"
    assert len(server.chat_requests()) == 1  # never retried once pieces came


def test_an_unreachable_model_is_offline():
    llm = OpenAIChat(f"http://127.0.0.1:{free_port()}", "m", timeouts=FAST)
    with pytest.raises(LLMOffline):
        _collect(llm.stream([{"role": "user", "content": "q"}]))
