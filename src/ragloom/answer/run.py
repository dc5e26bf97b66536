"""The answer stage, composed of what exists: retrieval and the context block
(`ragloom.context`), the relevance floor (`ragloom.answer.coverage`), the tool loop
(`ragloom.tools`) and the LLM client (`ragloom.llm`).

    question (+ history: rewritten into a standalone query by the model)
      -> search + pack, one version of the index
      -> below the floor: "not covered", no model call
      -> the model, streamed, with search/get_document offered for up to max_rounds rounds
      -> citations checked as the text streams -> AskResult

`ask_stream` yields the answer's text as it may be shown (invalid citations already taken
out), then the `AskResult`. Retrieval never needs the model: without one, or when it fails,
the result holds the passages and says why (`degraded`), unless `strict`.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ragloom.answer import coverage, prompt, rewrite
from ragloom.answer.citations import CitationCheck, says_not_covered
from ragloom.answer.result import AskResult
from ragloom.answer.sources import Sources
from ragloom.answer.toolbox import AnswerToolbox
from ragloom.contract.options import ARGUMENTS
from ragloom.contract.schema import check_value
from ragloom.errors import InputError, LLMError
from ragloom.llm import LLM, StreamingLLM, resolve_llm
from ragloom.tools import stream_tool_loop

NOT_COVERED = "The indexed material does not cover this question."
NO_LLM = "no LLM is configured (set one with --llm, llm=... or RAGLOOM_LLM)"
COVERAGE_DEPTH = 10  # hits the relevance floor looks at (the prompt takes top_k of them)
REWRITE_TOKENS = 60


def _check(name: str, value: Any) -> Any:
    if value is not None:
        check_value(ARGUMENTS[name], value, "library")
    return value


def _milliseconds(since: float) -> float:
    return round((time.perf_counter() - since) * 1000, 3)


def _budget(llm: LLM) -> float | None:
    """The seconds a model call may take to begin: the client's read timeout."""
    service = getattr(llm, "service", None)
    return service.timeouts.read if service is not None else None


def _model_events(
    llm: LLM, messages: list[dict[str, Any]], tools: Any, max_tokens: int | None
) -> Iterator[str | dict[str, Any]]:
    """One model call as text pieces, then the assistant message (a caller's LLM object
    without `stream` answers in one piece, without tools)."""
    if isinstance(llm, StreamingLLM):
        reply = None
        for event in llm.stream(messages, tools, max_tokens, _budget(llm)):
            if isinstance(event, str):
                yield event
            else:
                reply = event
        yield reply.message() if reply is not None else {"role": "assistant", "content": ""}
        return
    text = llm.chat(messages, max_tokens)
    yield text
    yield {"role": "assistant", "content": text}


def _complete(llm: LLM, messages: list[dict[str, Any]], max_tokens: int) -> str:
    """A short reply as one text (the rewrite)."""
    pieces = [e for e in _model_events(llm, messages, None, max_tokens) if isinstance(e, str)]
    return "".join(pieces)


def ask_stream(
    index: Any,
    question: str,
    collection: str = "default",
    top_k: int = 5,
    *,
    llm: Any = None,
    budget: int | None = None,
    history: Sequence[dict[str, str]] | None = None,
    template: str | Path | None = None,
    max_rounds: int = 3,
    min_relevance: float | None = None,
    max_tokens: int | None = None,
    show_prompt: bool = False,
    strict: bool = False,
    **search: Any,
) -> Iterator[str | AskResult]:
    """The answer to `question` from `index`'s passages, as it is generated: text pieces,
    then the `AskResult`. Options as `Index.ask`."""
    started = time.perf_counter()
    if not isinstance(question, str):
        raise InputError(f"question must be a string, got {type(question).__name__}")
    for name, value in (("max_rounds", max_rounds), ("min_relevance", min_relevance)):
        _check(name, value)
    _check("max_tokens", max_tokens)
    turns = rewrite.check_history(history)
    system = prompt.load_template(template)
    model = resolve_llm(llm) if llm is not None else index.services.llm
    result = AskResult(question, question, model=getattr(model, "name", None))
    failed = None  # the model's error, once it failed
    if turns and model is not None and question.strip():
        result.query, failed = _rewritten(model, question, turns, result)
        result.timings["rewrite"] = _milliseconds(started)
    retrieving = time.perf_counter()
    searching = {**search, "strict": True} if strict else search
    hits, packed = index.read(
        lambda reader: _retrieve(reader, result.query, collection, top_k, budget, searching)
    )
    sources = Sources(packed.passages)
    result.passages = sources.passages
    if hits.degraded:
        result.degrade(hits.reason or "retrieval degraded")
    floor = coverage.decide(hits, min_relevance, hits.mode)
    result.coverage = floor.to_dict()
    result.timings["retrieve"] = _milliseconds(retrieving)
    if not floor.covered or not packed.passages:
        result.abstained, result.answer = True, NOT_COVERED
        yield NOT_COVERED
    elif model is None or failed is not None:
        if strict:
            raise failed or InputError("ask needs an LLM", NO_LLM)
        result.degrade(NO_LLM if model is None else f"the model failed: {failed}")
    else:
        messages = prompt.messages(system, packed.text, question, turns)
        if show_prompt:
            result.prompt = [dict(m) for m in messages]
        toolbox = AnswerToolbox(index, sources, collection=collection, **search)
        yield from _answer(model, messages, toolbox, max_rounds, max_tokens, strict, result)
    result.timings["total"] = _milliseconds(started)
    yield result


def _rewritten(
    model: LLM, question: str, turns: list[dict[str, str]], result: AskResult
) -> tuple[str, LLMError | None]:
    """(the standalone query, the model's error if it failed: the raw question then)."""
    try:
        reply = _complete(model, rewrite.prompt(question, turns), REWRITE_TOKENS)
    except LLMError as exc:
        result.rewrite = {"query": question, "fallback": f"{exc.code}: {exc.message}"}
        return question, exc
    query = rewrite.standalone(reply, question)
    result.rewrite = {"query": query, "fallback": None if query != question else "no query"}
    return query, None


def _retrieve(
    reader: Any, query: str, collection: str, top_k: int, budget: int | None, search: Any
) -> tuple[Any, Any]:
    """The hits the floor looks at and the context block of the first `top_k`, from one
    version of the index."""
    _check("top_k", top_k)
    hits = reader.search(query, max(top_k, COVERAGE_DEPTH), collection, **search)
    shown = hits.with_hits(list(hits)[:top_k])
    return hits, reader.pack([(None, list(shown))], budget, instruction=None)


def _answer(
    model: LLM,
    messages: list[dict[str, Any]],
    toolbox: AnswerToolbox,
    max_rounds: int,
    max_tokens: int | None,
    strict: bool,
    result: AskResult,
) -> Iterator[str]:
    """The model's answer streamed through the citation check, tool rounds included."""
    sources = toolbox.sources
    checking = CitationCheck(sources.valid)
    text: list[str] = []
    calling = time.perf_counter()
    try:
        loop = stream_tool_loop(
            lambda m, tools: _model_events(model, m, tools, max_tokens),
            messages,
            toolbox,
            max_rounds,
        )
        while True:
            try:
                piece = checking.feed(next(loop))
            except StopIteration as done:
                result.rounds = done.value[1]
                break
            if piece:
                if not text:
                    result.timings["first_token"] = _milliseconds(calling)
                text.append(piece)
                yield piece
    except LLMError as exc:
        if strict:
            raise
        result.degrade(f"the model failed: {exc.code}: {exc.message}")
    tail = checking.flush()
    if tail:
        text.append(tail)
        yield tail
    result.timings["model"] = _milliseconds(calling)
    result.answer = "".join(text)
    result.citations = [sources.citation(n) for n in checking.cited]
    result.invalid_citations = checking.invalid
    result.abstained = says_not_covered(result.answer, checking.cited)


def ask(index: Any, question: str, **options: Any) -> AskResult:
    """`ask_stream` run to its end: the `AskResult`."""
    for event in ask_stream(index, question, **options):
        if isinstance(event, AskResult):
            return event
    raise AssertionError("ask_stream ends with its result")
