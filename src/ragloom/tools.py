"""Retrieval as a tool for LLMs: `search`, `get_document` and `context`, as an OpenAI
function-calling schema plus a dispatcher an app's tool loop calls (the MCP server,
`ragloom mcp`, exposes the same three tools).

    tools = ragloom.tools.Toolbox(index)
    reply = client.chat.completions.create(model=..., messages=messages, tools=tools.schemas)
    messages += tools.answer(reply.choices[0].message.tool_calls)  # one tool message each

`run_tool_loop` drives a whole exchange with a cap on tool rounds, so a model that keeps
calling tools still ends with an answer.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from typing import Any

from ragloom.contract.options import DEFAULT_TOP_K, TOOL_MAX_TOP_K
from ragloom.contract.schema import check_arguments, object_schema
from ragloom.errors import InputError, InvalidRequest, RagloomError

MAX_TOP_K = TOOL_MAX_TOP_K
MAX_DOCUMENT_CHARS = 20_000

# Each tool: (name, description, its arguments, the required ones). The arguments' types,
# bounds and descriptions come from the one declaration in `ragloom.contract.options`.
TOOLS: tuple[tuple[str, str, tuple[str, ...], tuple[str, ...]], ...] = (
    (
        "search",
        "Search the user's indexed material; returns the best passages with their ids, "
        "sources, scores and token counts.",
        ("query", "top_k", "collections", "filters"),
        ("query",),
    ),
    (
        "get_document",
        "The full text of one document (a search hit's document_id), or a character range of it.",
        ("document_id", "collection", "start", "end"),
        ("document_id",),
    ),
    (
        "context",
        "Numbered, cited passages for a question, ready to answer from, within a token budget.",
        ("query", "top_k", "collections", "filters", "budget"),
        ("query",),
    ),
)

SCHEMAS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": object_schema(arguments, required),
        },
    }
    for name, description, arguments, required in TOOLS
]
TOOL_NAMES = tuple(name for name, *_ in TOOLS)


def _check(name: str, args: Mapping[str, Any]) -> dict[str, Any]:
    """Arguments against the tool's schema: required, known, of the right type and bounds
    (returned with integers sent as 3.0 made 3, as JSON Schema counts them)."""
    _, _, arguments, required = next(t for t in TOOLS if t[0] == name)
    return check_arguments(arguments, required, args, "tool", f"{name}: ")


class Toolbox:
    """The three tools over one index. `defaults` (e.g. `{"collection": "docs"}` or search
    steps such as `{"rerank": True}`) apply to every search the tools run."""

    def __init__(self, index: Any, **defaults: Any) -> None:
        self.index = index
        self.defaults = defaults
        self.schemas = SCHEMAS

    # -- the tools ----------------------------------------------------------------------
    def search(
        self,
        query: str,
        top_k: int = DEFAULT_TOP_K,
        collections: Sequence[str] | None = None,
        filters: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The best passages for `query` with ids, sources, scores and token counts."""
        kwargs = {**self.defaults, "tokens": True}
        if filters is not None:
            kwargs["filters"] = filters
        if collections:
            requests = [{"collection": c, "top_k": top_k} for c in collections]
            result = self.index.search_many(query, requests, **kwargs)
            hits = result.merged[:top_k]
            degraded = result.degraded
        else:
            hits = self.index.search(query, top_k, **kwargs)
            degraded = hits.degraded
        return {
            "results": [self.result(rank, h) for rank, h in enumerate(hits, start=1)],
            "total_tokens": sum(h.tokens or 0 for h in hits),
            "degraded": degraded,
        }

    def result(self, rank: int, hit: Any) -> dict[str, Any]:
        """One search hit as the tool answers it."""
        return {
            "rank": rank,
            "document_id": hit.document_id,
            "chunk_id": hit.chunk_id,
            "collection": hit.collection,
            "title": hit.title,
            "source": hit.source,
            "place": hit.place,  # "p. 3", "slide 2", "cell 5" (converted files)
            "score": round(hit.score, 6),
            "tokens": hit.tokens,
            "start": hit.start,
            "end": hit.end,
            "text": hit.text,
        }

    def get_document(
        self,
        document_id: str,
        collection: str | None = None,
        start: int | None = None,
        end: int | None = None,
    ) -> dict[str, Any]:
        """A document's text (or `text[start:end]`), cut at MAX_DOCUMENT_CHARS."""
        name = collection or self.defaults.get("collection") or "default"
        text = self.index.document_text(document_id, name)
        lo = start or 0
        hi = len(text) if end is None else min(end, len(text))
        if lo > hi:
            raise InputError(f"get_document: start {lo} is after end {hi}")
        part = text[lo:hi]
        truncated = len(part) > MAX_DOCUMENT_CHARS
        return {
            "document_id": document_id,
            "collection": name,
            "start": lo,
            "end": lo + min(len(part), MAX_DOCUMENT_CHARS),
            "length": len(text),
            "truncated": truncated,
            "text": part[:MAX_DOCUMENT_CHARS],
        }

    def context(
        self,
        query: str,
        top_k: int = DEFAULT_TOP_K,
        collections: Sequence[str] | None = None,
        filters: dict[str, Any] | None = None,
        budget: int | None = None,
    ) -> dict[str, Any]:
        """A numbered, cited context block for `query` within `budget` tokens."""
        kwargs = dict(self.defaults)
        if filters is not None:
            kwargs["filters"] = filters
        requests = [{"collection": c, "top_k": top_k} for c in collections or ()]
        packed = self.index.context(
            query, top_k=top_k, collections=requests or None, budget=budget, **kwargs
        )
        data = packed.to_dict()
        return {
            "text": data["text"],
            "tokens": data["tokens"],
            "passages": data["passages"],
            "note": data["note"],
        }

    # -- dispatch -------------------------------------------------------------------------
    def call(self, name: str, arguments: str | Mapping[str, Any] | None) -> dict[str, Any]:
        """Run a tool by name with JSON (or dict) arguments. A bad call or a ragloom error
        comes back as `{"ok": false, "error": ...}` for the model to read, never raised."""
        try:
            if name not in TOOL_NAMES:
                raise InputError(f"unknown tool {name!r}", f"use one of {', '.join(TOOL_NAMES)}")
            if isinstance(arguments, str):
                try:
                    arguments = json.loads(arguments) if arguments.strip() else {}
                except json.JSONDecodeError as exc:
                    raise InputError(f"{name}: arguments are not valid JSON ({exc.msg})") from None
            if not isinstance(arguments or {}, Mapping):
                raise InvalidRequest(f"{name}: arguments must be a JSON object")
            args = _check(name, dict(arguments or {}))
            return {"ok": True, **getattr(self, name)(**args)}
        except RagloomError as exc:
            return {"ok": False, "error": {"code": exc.code, "message": exc.message}}

    def answer(self, tool_calls: Sequence[Any] | None) -> list[dict[str, Any]]:
        """One `{"role": "tool", "tool_call_id", "content"}` message per call of an assistant
        message (OpenAI dicts or SDK objects)."""
        messages = []
        for call in tool_calls or ():
            function = _field(call, "function")
            result = self.call(_field(function, "name"), _field(function, "arguments"))
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": _field(call, "id"),
                    "content": json.dumps(result, ensure_ascii=False),
                }
            )
        return messages


def _field(item: Any, name: str) -> Any:
    """A field of a tool call given as an OpenAI dict or an SDK object."""
    return item.get(name) if isinstance(item, Mapping) else getattr(item, name)


Step = Callable[[list[dict[str, Any]], list[dict[str, Any]] | None], dict[str, Any]]
# A streaming step: the model's text pieces as they come, then the assistant message (a dict).
StreamStep = Callable[
    [list[dict[str, Any]], list[dict[str, Any]] | None], Iterator["str | dict[str, Any]"]
]


def run_tool_loop(
    step: Step,
    messages: list[dict[str, Any]],
    toolbox: Toolbox,
    max_rounds: int = 3,
) -> tuple[dict[str, Any], int]:
    """Drive a tool-calling exchange: `step(messages, tools)` is the app's model call and
    returns the assistant message (a dict with optional `tool_calls`). Tool rounds are
    answered until the model replies without tools; after `max_rounds` rounds the model is
    called once more with no tools offered, so it must answer. Returns (the final assistant
    message, tool rounds used); `messages` grows with the exchange."""
    rounds = stream_tool_loop(lambda m, t: iter((step(m, t),)), messages, toolbox, max_rounds)
    while True:
        try:
            next(rounds)
        except StopIteration as done:
            return done.value


def stream_tool_loop(
    step: StreamStep,
    messages: list[dict[str, Any]],
    toolbox: Toolbox,
    max_rounds: int = 3,
) -> Generator[str, None, tuple[dict[str, Any], int]]:
    """`run_tool_loop` for a model that streams: `step(messages, tools)` yields the text
    pieces of its reply, then the assistant message. Yields the pieces of every round as
    they come; returns (the final assistant message, tool rounds used)."""
    if isinstance(max_rounds, bool) or not isinstance(max_rounds, int) or max_rounds < 0:
        raise InputError(f"max_rounds must be a non-negative integer, got {max_rounds!r}")
    rounds = 0
    while True:
        offered = toolbox.schemas if rounds < max_rounds else None
        message: dict[str, Any] | None = None
        for event in step(messages, offered):
            if isinstance(event, str):
                yield event
            else:
                message = event
        if message is None:
            raise InputError("the model step ended without a message")
        messages.append(message)
        calls = message.get("tool_calls")
        if not calls or offered is None:
            return message, rounds
        messages.extend(toolbox.answer(calls))
        rounds += 1
