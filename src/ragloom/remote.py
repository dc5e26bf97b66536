"""Calls to remote services (embedding, LLM, rerank): timeouts, one retry, typed errors.

Every remote call in ragloom goes through `RemoteService.post_json` so that they all behave
alike (docs/architecture.md, "Consistency and failure"): a connect timeout and a read
timeout the user can set, one retry after `retry_delay` seconds, then a typed error: the
service's *offline* class when it cannot be reached, its *failed* class when it answered
badly or too slowly.

After a call has failed (retry included) the service is remembered as down for `cooldown`
seconds: calls in that window fail at once with the same typed error instead of paying the
timeouts again, so a search with a dead service answers (degraded) immediately.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields, replace
from typing import Any, ClassVar, TypeVar
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from ragloom.errors import InputError, RagloomError

T = TypeVar("T")
MIN_ATTEMPT = 0.05  # seconds: an attempt with less time left than this is not made


# The timing options every service spec takes (`?timeout=2&cooldown=0`), by Timeouts field.
TIMEOUT_OPTIONS = {
    "timeout": "read",
    "read_timeout": "read",
    "connect_timeout": "connect",
    "query_timeout": "query",
    "query_budget": "query_budget",
    "retry_delay": "retry_delay",
    "cooldown": "cooldown",
}


@dataclass(frozen=True)
class Timeouts:
    """How long to wait for a remote service, and how to retry.

    `connect`: seconds to establish a connection. `read`: seconds to wait for an answer to a
    batch call (ingest). `query`: read timeout for a single interactive call (a query
    embedding, an LLM step of a search). `retry_delay`: pause before the one retry.
    `cooldown`: seconds a failed service is skipped before it is tried again (0: never skip).
    `query_budget`: seconds one interactive call may take in all, retry included (None: no
    overall limit). Worst case of one interactive call: its budget, else
    2 * (connect or query) + retry_delay.
    """

    connect: float = 1.0
    read: float = 60.0
    query: float = 5.0
    retry_delay: float = 1.0
    cooldown: float = 10.0
    query_budget: float | None = None

    def __post_init__(self) -> None:
        for item in fields(self):
            value = getattr(self, item.name)
            if value is None and item.name == "query_budget":
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise InputError(f"timeout {item.name!r} must be a non-negative number")
            if item.name in ("connect", "read", "query", "query_budget") and value == 0:
                raise InputError(f"timeout {item.name!r} must be greater than 0")

    def with_options(self, options: dict[str, str]) -> Timeouts:
        """Apply spec options (`TIMEOUT_OPTIONS`); unknown names are left for the caller."""
        changes: dict[str, float] = {}
        for key, value in options.items():
            if key in TIMEOUT_OPTIONS:
                try:
                    changes[TIMEOUT_OPTIONS[key]] = float(value)
                except ValueError:
                    raise InputError(f"{key}={value!r} is not a number of seconds") from None
        return replace(self, **changes) if changes else self


@dataclass(frozen=True)
class ServiceSpec:
    """A parsed spec such as `openai:MODEL@http://host:port/v1?timeout=2`."""

    provider: str
    model: str
    base_url: str
    options: dict[str, str]


def parse_service_spec(spec: str, providers: tuple[str, ...], help_text: str) -> ServiceSpec:
    """Split `provider:MODEL@URL[?name=value&...]`; the query part holds ragloom's options
    (timeouts), not the service's, and is removed from the URL."""
    provider, _, rest = spec.strip().partition(":")
    model, _, url = rest.partition("@")
    if provider not in providers or not model or not url:
        raise InputError(f"unknown service spec {spec!r}", help_text)
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise InputError(f"{spec!r}: the address must start with http:// or https://", help_text)
    options = dict(parse_qsl(parts.query, keep_blank_values=True))
    base = urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))
    return ServiceSpec(provider, model, base.rstrip("/"), options)


def without_v1(base_url: str) -> str:
    """An OpenAI-style base URL without its trailing `/v1` (paths add it)."""
    base = base_url.rstrip("/")
    return base[: -len("/v1")] if base.endswith("/v1") else base


def bearer(api_key: str | None) -> dict[str, str]:
    """The Authorization header for an API key (none without a key)."""
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


class RemoteService:
    """One remote service at `base_url`: JSON POSTs with timeouts, one retry, typed errors.

    `offline` and `failed` are the error classes to raise (for example `EmbeddingOffline` and
    `EmbedFailed`); `what` names the service in messages ("the embedding service").
    """

    def __init__(
        self,
        base_url: str,
        offline: type[RagloomError],
        failed: type[RagloomError],
        what: str,
        timeouts: Timeouts | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeouts = timeouts or Timeouts()
        self.offline, self.failed, self.what = offline, failed, what
        import httpx  # (here: a search that calls no service never pays its import)

        self._client = httpx.Client(headers=headers or {}, follow_redirects=False)
        self._down_until = 0.0
        self._down_error: RagloomError | None = None
        self._lock = threading.Lock()

    def post_json(
        self,
        path: str,
        payload: Any,
        parse: Callable[[Any], T],
        interactive: bool = False,
        final_statuses: tuple[int, ...] = (),
    ) -> T:
        """POST `payload` to `base_url + path` and return `parse(json body)`.

        `parse` raises ValueError/TypeError/KeyError on an answer it cannot use (that is a
        `failed` error). `interactive` uses the shorter query read timeout. An answer with a
        status in `final_statuses` (such as 404 when probing for an endpoint) raises the
        `failed` error at once: no retry, and the service is not marked down.
        """
        with self._lock:
            if time.monotonic() < self._down_until and self._down_error is not None:
                raise self._remembered()
        budget = self.timeouts.query_budget if interactive else None
        deadline = None if budget is None else time.monotonic() + budget
        try:
            return self._attempt(path, payload, parse, interactive, deadline)
        except RagloomError as exc:
            if getattr(exc, "status", None) in final_statuses:
                raise
            first = exc
        try:
            if deadline is not None and deadline - time.monotonic() - self.timeouts.retry_delay < (
                MIN_ATTEMPT
            ):
                raise first  # no time left for the retry within the budget
            time.sleep(self.timeouts.retry_delay)
            result = self._attempt(path, payload, parse, interactive, deadline)
        except RagloomError as exc:
            with self._lock:
                self._down_until = time.monotonic() + self.timeouts.cooldown
                self._down_error = exc
            raise
        with self._lock:
            self._down_until, self._down_error = 0.0, None
        return result

    def _remembered(self) -> RagloomError:
        error = self._down_error
        assert error is not None
        left = max(0.0, self._down_until - time.monotonic())
        exc = type(error)(
            f"{error.message} (failed moments ago; not retried for another {left:.0f} s)",
            error.hint,
        )
        exc.code = error.code
        return exc

    def _attempt(
        self,
        path: str,
        payload: Any,
        parse: Callable[[Any], T],
        interactive: bool,
        deadline: float | None = None,
    ) -> T:
        import httpx

        url = self.base_url + path
        read, timeout = self._waits(interactive, deadline)
        try:
            response = self._client.post(url, json=payload, timeout=timeout)
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            raise self._unreachable(url, exc) from None
        except httpx.TimeoutException:
            raise self.failed(
                f"{self.what} at {url} did not answer within {read:g} s",
                "raise the limit with ?query_budget=SECONDS (a search's call) or "
                "?timeout=SECONDS (indexing) on the spec, or check the service"
                if interactive
                else "raise the timeout with ?timeout=SECONDS on the spec, or check the service",
            ) from None
        except httpx.HTTPError as exc:
            raise self.failed(f"request to {self.what} at {url} failed: {exc}") from None
        if response.status_code != 200:
            raise self._refused(url, response.status_code, response.text)
        try:
            return parse(response.json())
        except (ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
            raise self.failed(f"malformed answer from {self.what} at {url}: {exc}") from None

    def post_stream(
        self,
        path: str,
        payload: Any,
        events: Callable[[Iterator[str]], Iterator[T]],
        budget: float | None = None,
    ) -> Iterator[T]:
        """POST `payload` and yield `events(lines)`: the answer read line by line as it
        arrives (server-sent events, NDJSON); `events` raises ValueError on a line that
        breaks its protocol (a `failed` error).

        The read timeout is the longest silence allowed (before the first line and between
        lines). A failure before any event was yielded is retried once after `retry_delay`,
        if `budget` seconds (from the start) leave room; once events have come, a failure
        ends the stream with the error (what was yielded stays yielded).
        """
        with self._lock:
            if time.monotonic() < self._down_until and self._down_error is not None:
                raise self._remembered()
        deadline = None if budget is None else time.monotonic() + budget
        for attempt in (1, 2):
            started = False
            try:
                for event in self._events(path, payload, events, deadline):
                    started = True
                    yield event
                break
            except RagloomError as exc:
                room = deadline is None or (
                    deadline - time.monotonic() - self.timeouts.retry_delay >= MIN_ATTEMPT
                )
                if started or attempt == 2 or not room:
                    with self._lock:
                        self._down_until = time.monotonic() + self.timeouts.cooldown
                        self._down_error = exc
                    raise
                time.sleep(self.timeouts.retry_delay)
        with self._lock:
            self._down_until, self._down_error = 0.0, None

    def _events(
        self,
        path: str,
        payload: Any,
        events: Callable[[Iterator[str]], Iterator[T]],
        deadline: float | None,
    ) -> Iterator[T]:
        url = self.base_url + path
        try:
            yield from events(self._stream(path, payload, deadline))
        except ValueError as exc:
            raise self.failed(f"malformed answer from {self.what} at {url}: {exc}") from None

    def _stream(self, path: str, payload: Any, deadline: float | None) -> Iterator[str]:
        """The answer's lines as they arrive, with the typed errors of `post_json`."""
        import httpx

        url = self.base_url + path
        read, timeout = self._waits(False, deadline)
        try:
            with self._client.stream("POST", url, json=payload, timeout=timeout) as response:
                if response.status_code != 200:
                    text = response.read().decode("utf-8", "replace")
                    raise self._refused(url, response.status_code, text)
                yield from response.iter_lines()
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            raise self._unreachable(url, exc) from None
        except httpx.TimeoutException:
            raise self.failed(
                f"{self.what} at {url} went silent for {round(read, 2):g} s",
                "raise the limit with ?timeout=SECONDS on the spec, or check the service",
            ) from None
        except httpx.HTTPError as exc:
            raise self.failed(f"request to {self.what} at {url} failed: {exc}") from None

    def _waits(self, interactive: bool, deadline: float | None) -> tuple[float, Any]:
        """The read wait of one attempt, and its timeouts (the call's budget caps each)."""
        read = self.timeouts.query if interactive else self.timeouts.read
        connect = self.timeouts.connect
        if deadline is not None:
            left = max(deadline - time.monotonic(), MIN_ATTEMPT)
            read, connect = min(read, left), min(connect, left)
        import httpx

        return read, httpx.Timeout(read, connect=connect)

    def _unreachable(self, url: str, exc: Exception) -> RagloomError:
        return self.offline(
            f"cannot reach {self.what} at {url} ({exc or type(exc).__name__})",
            "start the service or check its address",
        )

    def _refused(self, url: str, status: int, text: str) -> RagloomError:
        error = self.failed(f"{self.what} at {url} answered {status}: {text[:200]}")
        error.status = status  # type: ignore[attr-defined]
        return error

    def close(self) -> None:
        """Close the connection pool."""
        self._client.close()


class ServiceClient:
    """A model served over HTTP (a chat model, a reranker): its `provider:model` name, one
    `RemoteService` for its calls and a count of the requests made.

    A subclass names its `provider`, the `path` it posts to, its error classes (`offline`,
    `failed`), the service in messages (`what`), its `default_timeouts` and the environment
    variables a missing `api_key` is read from (`key_vars`, the first one set wins).
    """

    provider: ClassVar[str] = ""
    path: ClassVar[str] = ""
    offline: ClassVar[type[RagloomError]]
    failed: ClassVar[type[RagloomError]]
    what: ClassVar[str]
    default_timeouts: ClassVar[Timeouts]
    key_vars: ClassVar[tuple[str, ...]] = ()

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeouts: Timeouts | None = None,
    ) -> None:
        if api_key is None:
            api_key = next((os.environ[v] for v in self.key_vars if os.environ.get(v)), None)
        self.model = model
        self.name = f"{self.provider}:{model}"
        self.service = RemoteService(
            base_url,
            self.offline,
            self.failed,
            self.what,
            timeouts or self.default_timeouts,
            bearer(api_key),
        )
        self.calls = 0  # requests made (tests and benchmarks check that none were made)

    def close(self) -> None:
        self.service.close()
