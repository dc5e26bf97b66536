"""Streamed chat answers on the wire: OpenAI's server-sent events and Ollama's NDJSON, read
into text pieces as they arrive and one finished reply (its text and its tool calls).

A streamed OpenAI answer is `data: {chunk}` lines ending with `data: [DONE]`; each chunk's
`choices[0].delta` carries a piece of `content` or pieces of `tool_calls` (by `index`: the
call's id and name come first, its JSON arguments in fragments). Ollama's is one JSON object
a line, `message.content` a piece of the text, `message.tool_calls` whole calls (arguments
as an object), the last line `"done": true`. Tool calls are given back in OpenAI's shape
whichever protocol brought them, since that is what `ragloom.tools` answers.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass
class ChatReply:
    """A finished assistant turn: its text, its tool calls (OpenAI's shape:
    `{"id", "type": "function", "function": {"name", "arguments": JSON text}}`) and why the
    model stopped."""

    content: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    finish_reason: str | None = None

    def message(self) -> dict[str, Any]:
        """The assistant message to append to the conversation."""
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = self.tool_calls
        return message


class StreamBroken(ValueError):
    """The service's stream broke the protocol or reported an error in it."""


def _chunk(data: str) -> dict[str, Any]:
    """One event of the stream: a JSON object that reports no error."""
    try:
        chunk = json.loads(data)
    except ValueError:
        raise StreamBroken(f"a stream event is not JSON: {data[:120]!r}") from None
    if not isinstance(chunk, dict):
        raise StreamBroken(f"a stream event is not an object: {data[:120]!r}")
    if "error" in chunk:
        error = chunk["error"]
        text = error.get("message") or error if isinstance(error, dict) else error
        raise StreamBroken(f"the model reported an error: {text}")
    return chunk


def _take_text(reply: ChatReply, part: Mapping[str, Any]) -> str:
    """The piece of the answer's text a stream event carries ("" for none), added to `reply`."""
    text = part.get("content")
    if not isinstance(text, str):
        return ""
    reply.content += text
    return text


def _tool_call(call_id: str | None, index: int, name: str, arguments: str) -> dict[str, Any]:
    """A finished tool call in OpenAI's shape, whichever protocol brought it (`call_N` when
    the model gave it no id)."""
    return {
        "id": call_id or f"call_{index}",
        "type": "function",
        "function": {"name": name, "arguments": arguments},
    }


def openai_events(lines: Iterable[str]) -> Iterator[str | ChatReply]:
    """Text pieces of an OpenAI chat-completions stream as they come, then the `ChatReply`."""
    reply = ChatReply()
    calls: dict[int, dict[str, Any]] = {}
    done = False
    for line in lines:
        if not line.startswith("data:"):
            continue  # blank separators, `: keep-alive` comments, `event:` names
        data = line[5:].strip()
        if data == "[DONE]":
            done = True
            break
        chunk = _chunk(data)
        for choice in chunk.get("choices") or ():
            delta = choice.get("delta") or {}
            if text := _take_text(reply, delta):
                yield text
            for piece in delta.get("tool_calls") or ():
                _add_call_piece(calls, piece)
            if choice.get("finish_reason"):
                reply.finish_reason = choice["finish_reason"]
    if not done and reply.finish_reason is None:
        raise StreamBroken("the stream ended before the answer did (no [DONE])")
    reply.tool_calls = [_finished_call(calls[i], i) for i in sorted(calls)]
    yield reply


def _add_call_piece(calls: dict[int, dict[str, Any]], piece: Any) -> None:
    if not isinstance(piece, dict):
        raise StreamBroken(f"a tool call piece is not an object: {piece!r}")
    index = piece.get("index", len(calls))
    call = calls.setdefault(index, {"id": None, "name": "", "arguments": ""})
    if piece.get("id"):
        call["id"] = piece["id"]
    function = piece.get("function") or {}
    if function.get("name"):
        call["name"] += function["name"]
    if isinstance(function.get("arguments"), str):
        call["arguments"] += function["arguments"]


def _finished_call(call: dict[str, Any], index: int) -> dict[str, Any]:
    return _tool_call(call["id"], index, call["name"], call["arguments"])


def ollama_events(lines: Iterable[str]) -> Iterator[str | ChatReply]:
    """Text pieces of an Ollama `/api/chat` stream as they come, then the `ChatReply`."""
    reply = ChatReply()
    done = False
    for line in lines:
        if not line.strip():
            continue
        chunk = _chunk(line)
        message = chunk.get("message") or {}
        if text := _take_text(reply, message):
            yield text
        for call in message.get("tool_calls") or ():
            reply.tool_calls.append(_ollama_call(call, len(reply.tool_calls)))
        if chunk.get("done"):
            reply.finish_reason = chunk.get("done_reason") or "stop"
            done = True
            break
    if not done:
        raise StreamBroken("the stream ended before the answer did (no done line)")
    yield reply


def _ollama_call(call: Any, index: int) -> dict[str, Any]:
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        raise StreamBroken(f"a tool call without a function name: {call!r}")
    arguments = function.get("arguments", {})
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return _tool_call(call.get("id"), index, function["name"], text)


def ollama_messages(messages: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI-shaped messages as Ollama's chat takes them: a tool call's arguments as an
    object, a tool result named by `tool_name` (Ollama has no call ids)."""
    names: dict[str, str] = {}
    out = []
    for given in messages:
        message = dict(given)
        calls = message.get("tool_calls")
        if calls:
            converted = []
            for call in calls:
                function = call["function"]
                names[call.get("id") or ""] = function["name"]
                try:
                    arguments = json.loads(function.get("arguments") or "{}")
                except ValueError:
                    arguments = {}
                converted.append({"function": {"name": function["name"], "arguments": arguments}})
            message["tool_calls"] = converted
        if message.get("role") == "tool":
            message["tool_name"] = names.get(message.pop("tool_call_id", "") or "", "")
        out.append(message)
    return out
