"""`POST /ask`: the answer stage over HTTP (`Index.ask_stream`).

The body takes the question, every search control `/query` takes, and the answer's own
options, all derived from `ragloom.contract`. The answer is JSON, or with `"stream": true`
`text/event-stream`: `event: text` events carrying the answer's text as it arrives
(`{"text": "..."}`), then one `event: done` with the whole JSON answer (citations
included), or `event: error` with the error envelope if the answer fails midway. An error
found before anything was streamed (a bad collection, `strict` with no model) answers with
its own status, as every endpoint does.

The answer runs on a thread of its own (a model may take seconds); its events reach the
event loop as they come, so the first piece of text goes out as soon as the model sends it.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import APIRouter
from pydantic import AfterValidator, BaseModel, Field, create_model
from starlette.concurrency import run_in_threadpool
from starlette.responses import StreamingResponse

from ragloom.answer import AskResult
from ragloom.contract.http import fields
from ragloom.contract.options import ARGUMENTS
from ragloom.errors import RagloomError
from ragloom.index import DEFAULT_COLLECTION
from ragloom.server import schemas
from ragloom.server.holder import IndexHolder
from ragloom.server.paths import public_path
from ragloom.server.requests import Name, SearchControls, _encodable, _Strict
from ragloom.server.responses import JSONResponse

ANSWER_FIELDS = ("top_k", "budget", "max_rounds", "min_relevance", "max_tokens", "show_prompt")


class Turn(_Strict):
    """One earlier turn of the conversation."""

    role: Literal["user", "assistant"]
    content: Annotated[str, Field(max_length=100_000), AfterValidator(_encodable)]


def _history_size(turns: list[Turn] | None) -> list[Turn] | None:
    limit = ARGUMENTS["history"].max_json
    size = len(json.dumps([t.model_dump() for t in turns or ()], ensure_ascii=False))
    if limit is not None and size > limit:
        raise ValueError(f"history must be at most {limit:,} characters as JSON")
    return turns


class _Ask(SearchControls):  # type: ignore[valid-type,misc]
    """`POST /ask`."""

    question: Annotated[
        str,
        Field(max_length=ARGUMENTS["question"].max_length, description="The question."),
        AfterValidator(_encodable),
    ]
    collection: Name | None = Field(None, description='Default "default".')
    history: Annotated[
        list[Turn] | None,
        Field(max_length=ARGUMENTS["history"].max_length),
        AfterValidator(_history_size),
    ] = Field(None, description=ARGUMENTS["history"].description)

    def ask_options(self) -> dict[str, Any]:
        """`Index.ask_stream` keywords: search controls, the answer's own options, history."""
        options = {name: getattr(self, name) for name in ANSWER_FIELDS}
        history = [t.model_dump() for t in self.history] if self.history else None
        search = self.search_kwargs()
        return {
            **search,
            **{k: v for k, v in options.items() if v is not None},
            "collection": self.collection or DEFAULT_COLLECTION,
            "history": history,
            "strict": bool(search.pop("strict", False)),
        }


AskRequest: Any = create_model(  # type: ignore[call-overload]
    "AskRequest",
    __base__=_Ask,
    __module__=__name__,
    **fields((*ANSWER_FIELDS, "stream")),
)


class Citation(BaseModel):
    n: int = Field(description="The number the answer cites, [n].")
    document_id: str
    chunk_id: str | None
    chunk_ids: list[str]
    collection: str
    start: int
    end: int
    source: str | None
    title: str | None
    place: str | None = Field(None, description='Its page(s), slide or cell: "p. 3".')
    page: int | None
    pages: list[int] | None
    section: str | None


class AskPassage(BaseModel):
    """A passage the model was given, by its number."""

    number: int
    collection: str
    document_id: str
    source: str | None
    title: str | None
    start: int
    end: int
    chunk_ids: list[str]
    tokens: int
    truncated: bool
    place: str | None = Field(None, description='Its page(s), slide or cell: "p. 3".')
    page: int | None
    pages: list[int] | None
    section: str | None
    text: str
    found_by: Literal["context", "search", "get_document"] = Field(
        description="context (the first passages), or the model's search or get_document."
    )


class AskResponse(BaseModel):
    """The answer (also the last event of a stream, `event: done`)."""

    ok: Literal[True] = True
    question: str
    query: str = Field(description="What was searched: the question, or its rewrite.")
    answer: str = Field(description="The text as streamed; citations of no passage removed.")
    citations: list[Citation]
    invalid_citations: list[int] = Field(description="Numbers cited that named no passage.")
    passages: list[AskPassage]
    abstained: bool = Field(description="The material does not cover the question.")
    degraded: bool = Field(description="No answer, or a partial one: `reason` says why.")
    reason: str | None
    rounds: int = Field(description="Tool rounds the model took.")
    coverage: dict[str, Any] = Field(description="The relevance floor's decision.")
    model: str | None
    timings: dict[str, float]
    rewrite: dict[str, Any] | None = None
    prompt: list[dict[str, Any]] | None = None


def _public(result: AskResult, roots: Sequence[Path]) -> dict[str, Any]:
    """The answer as JSON, each `source` relative to its root."""
    data = result.to_dict()
    for item in (*data["passages"], *data["citations"]):
        item["source"] = public_path(item.get("source"), roots)
    return {"ok": True, **data}


def _sse(event: str, data: Any) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


async def _relay(events: Iterator[Any], roots: Sequence[Path]) -> AsyncIterator[bytes]:
    """The answer's events as server-sent events, read from a thread as they come."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
    stop = threading.Event()

    def produce() -> None:
        try:
            for event in events:
                loop.call_soon_threadsafe(queue.put_nowait, ("event", event))
                if stop.is_set():
                    break
        except BaseException as exc:  # reported to the client as an error event
            loop.call_soon_threadsafe(queue.put_nowait, ("error", exc))
        finally:
            close = getattr(events, "close", None)
            if close is not None:
                close()  # a client gone: the model's stream is closed too
            loop.call_soon_threadsafe(queue.put_nowait, ("end", None))

    worker = threading.Thread(target=produce, name="ragloom-ask", daemon=True)
    worker.start()
    try:
        while True:
            kind, value = await queue.get()
            if kind == "end":
                return
            if kind == "error":
                yield _sse("error", _envelope(value))
            elif isinstance(value, AskResult):
                yield _sse("done", _public(value, roots))
            else:
                yield _sse("text", {"text": value})
    finally:
        stop.set()


def _envelope(error: BaseException) -> dict[str, Any]:
    if isinstance(error, RagloomError):
        return {"ok": False, "error": error.message, "code": error.code, "hint": error.hint}
    return {"ok": False, "error": "unexpected server error", "code": "internal", "hint": None}


def _started(holder: IndexHolder, body: Any) -> tuple[Iterator[Any], list[Any]]:
    """The answer's events, with the first already taken: an error raised before anything
    could be streamed comes out here, as an ordinary error answer."""
    events = holder.get().ask_stream(body.question, **body.ask_options())
    return events, [next(events)]


def _event(name: str, content: dict[str, Any], description: str) -> dict[str, Any]:
    data = {"type": "string", "contentMediaType": "application/json", "contentSchema": content}
    return {
        "type": "object",
        "description": description,
        "properties": {"event": {"const": name}, "data": data},
        "required": ["event", "data"],
    }


# One server-sent event of a streamed answer (OpenAPI 3.1: the schema of each event).
EVENT_SCHEMA = {
    "oneOf": [
        _event(
            "text",
            {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
            "A piece of the answer's text, as the model sent it.",
        ),
        _event("done", {"$ref": "#/components/schemas/AskResponse"}, "The whole answer, last."),
        _event("error", {"$ref": "#/components/schemas/ErrorResponse"}, "The answer failed."),
    ]
}


def build_ask_router(holder: IndexHolder, roots: Sequence[Path]) -> APIRouter:
    """The `/ask` endpoint over one index."""
    router = APIRouter()
    errors: dict[int | str, dict[str, Any]] = {
        status: {"model": schemas.ErrorResponse, "description": text}
        for status, text in (
            (400, "A field missing, unknown or of the wrong type (bad_request), or bad input"),
            (404, "Unknown collection"),
            (409, "The collection cannot serve this (no vectors, or another model's vectors)"),
            (502, "With strict: the model failed (llm_failed, offline)"),
            (503, "Index unavailable"),
        )
    }
    stream_doc: dict[int | str, dict[str, Any]] = {
        200: {
            "content": {"text/event-stream": {"schema": EVENT_SCHEMA}},
            "description": 'JSON, or with "stream": true server-sent events: `text` events'
            ' ({"text": ...}), then `done` (this JSON) or `error` (the error envelope).',
        }
    }

    @router.post("/ask", response_model=AskResponse, responses={**errors, **stream_doc})
    async def ask(body: AskRequest) -> Any:  # type: ignore[valid-type]
        """Answer a question from the indexed passages with the server's model (--llm),
        citations checked; without a model, or when it fails, the passages and why."""
        if not body.stream:
            answer = await run_in_threadpool(
                lambda: holder.get().ask(body.question, **body.ask_options())
            )
            return JSONResponse(_public(answer, roots))
        events, first = await run_in_threadpool(_started, holder, body)
        return StreamingResponse(
            _relay(_chain(first, events), roots),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    return router


def _chain(first: list[Any], events: Iterator[Any]) -> Iterator[Any]:
    yield from first
    yield from events
