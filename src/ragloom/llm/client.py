"""Chat clients: OpenAI-compatible `/v1/chat/completions` and Ollama `/api/chat`.

Both go through `ragloom.remote.RemoteService` (connect/read timeouts, one retry, cooldown)
and raise `LLMOffline` (cannot connect) or `LLMFailed` (bad status, malformed body, too slow).
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from ragloom.errors import InputError, LLMFailed, LLMOffline
from ragloom.llm.stream import (
    ChatReply,
    ollama_events,
    ollama_messages,
    openai_events,
)
from ragloom.remote import (
    TIMEOUT_OPTIONS,
    ServiceClient,
    Timeouts,
    parse_service_spec,
    without_v1,
)

ENV_VAR = "RAGLOOM_LLM"
API_KEY_VAR = "RAGLOOM_LLM_API_KEY"
SPEC_HELP = "use openai:MODEL@BASE_URL or ollama:MODEL@BASE_URL (options: ?timeout=SECONDS)"
# An LLM step generates text: allow more than an embedding's read time by default.
DEFAULT_TIMEOUTS = Timeouts(connect=2.0, read=30.0)

Message = Mapping[str, Any]


@runtime_checkable
class LLM(Protocol):
    """Anything that answers a chat: ragloom's clients, or a caller's own object."""

    name: str

    def chat(self, messages: Sequence[Message], max_tokens: int | None = None) -> str:
        """The assistant's reply text to `messages` (deterministic: temperature 0)."""
        ...


@runtime_checkable
class StreamingLLM(LLM, Protocol):
    """A chat client that also streams its answer and takes tools (ragloom's clients)."""

    def stream(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None = None,
        max_tokens: int | None = None,
        budget: float | None = None,
    ) -> Iterator[str | ChatReply]:
        """Text pieces as the model sends them, then the finished `ChatReply`."""
        ...


class ChatLLM(ServiceClient, ABC):
    """Shared transport of the HTTP chat clients."""

    offline, failed, what = LLMOffline, LLMFailed, "the LLM service"
    default_timeouts = DEFAULT_TIMEOUTS

    @abstractmethod
    def _payload(self, messages: Sequence[Message], max_tokens: int | None) -> dict[str, Any]:
        """The request body."""

    @abstractmethod
    def _content(self, body: Any) -> str:
        """The reply text from the response body (raises KeyError/TypeError/ValueError)."""

    def chat(self, messages: Sequence[Message], max_tokens: int | None = None) -> str:
        """The reply to `messages`, at temperature 0."""
        self.calls += 1
        return self.service.post_json(self.path, self._payload(messages, max_tokens), self._text)

    def stream(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None = None,
        max_tokens: int | None = None,
        budget: float | None = None,
    ) -> Iterator[str | ChatReply]:
        """The reply to `messages` as it is generated (temperature 0): text pieces, then the
        finished `ChatReply` with any tool calls. `tools` are OpenAI function schemas.
        `budget`: seconds from the start within which a failed first attempt may be retried
        (see `RemoteService.post_lines`); the read timeout bounds every silence."""
        self.calls += 1
        payload = self._payload(messages, max_tokens)
        payload["stream"] = True
        if tools:
            payload["tools"] = list(tools)
        return self.service.post_stream(self.path, payload, self._events, budget)

    @abstractmethod
    def _events(self, lines: Iterable[str]) -> Iterator[str | ChatReply]:
        """The protocol's stream read into text pieces and the finished reply."""

    def _text(self, body: Any) -> str:
        content = self._content(body)
        if not isinstance(content, str):
            raise TypeError("the reply has no text content")
        return content


class OpenAIChat(ChatLLM):
    """OpenAI-compatible `POST {base}/v1/chat/completions` (llama.cpp, vLLM, LM Studio, ...)."""

    provider = "openai"
    path = "/v1/chat/completions"
    key_vars = (API_KEY_VAR, "OPENAI_API_KEY")

    def __init__(self, base_url: str, model: str, api_key: str | None = None, **kw: Any) -> None:
        super().__init__(without_v1(base_url), model, api_key, **kw)

    def _payload(self, messages: Sequence[Message], max_tokens: int | None) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": list(messages), "temperature": 0}
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        return body

    def _content(self, body: Any) -> str:
        return body["choices"][0]["message"]["content"]

    def _events(self, lines: Iterable[str]) -> Iterator[str | ChatReply]:
        return openai_events(lines)


class OllamaChat(ChatLLM):
    """Ollama `POST {base}/api/chat` with `stream: false`."""

    provider = "ollama"
    path = "/api/chat"
    key_vars = (API_KEY_VAR,)

    def _payload(self, messages: Sequence[Message], max_tokens: int | None) -> dict[str, Any]:
        options: dict[str, Any] = {"temperature": 0}
        if max_tokens is not None:
            options["num_predict"] = max_tokens
        return {
            "model": self.model,
            "messages": ollama_messages(messages),
            "stream": False,
            "options": options,
        }

    def _content(self, body: Any) -> str:
        return body["message"]["content"]

    def _events(self, lines: Iterable[str]) -> Iterator[str | ChatReply]:
        return ollama_events(lines)


def check_llm_spec(spec: str) -> None:
    """Fail early, without building anything, on a spec `resolve_llm` would refuse."""
    parsed = parse_service_spec(spec, ("openai", "ollama"), SPEC_HELP)
    DEFAULT_TIMEOUTS.with_options(parsed.options)


def resolve_llm(spec: str | LLM | None = None) -> LLM | None:
    """An LLM client from a spec (`openai:MODEL@URL?timeout=20`, `ollama:MODEL@URL`), an LLM
    object as is, or None: then $RAGLOOM_LLM when set, else no LLM. Makes no request."""
    if spec is not None and not isinstance(spec, str):
        if not isinstance(spec, LLM):
            raise InputError(f"llm must be a spec string or an object with chat(), got {spec!r}")
        return spec
    spec = spec if spec is not None else os.environ.get(ENV_VAR)
    if spec is None or not spec.strip() or spec.strip() == "none":
        return None
    parsed = parse_service_spec(spec, ("openai", "ollama"), SPEC_HELP)
    unknown = set(parsed.options) - set(TIMEOUT_OPTIONS)
    if unknown:
        raise InputError(f"unknown LLM option(s): {', '.join(sorted(unknown))}", SPEC_HELP)
    timeouts = DEFAULT_TIMEOUTS.with_options(parsed.options)
    cls = OpenAIChat if parsed.provider == "openai" else OllamaChat
    return cls(parsed.base_url, parsed.model, timeouts=timeouts)
