"""Exception handlers: every failure becomes a typed JSON error, never a stack trace."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.responses import Response
from starlette.routing import Match
from starlette.types import Message, Receive, Scope, Send

from ragloom.errors import RagloomError
from ragloom.server import validation
from ragloom.server.errors import status_for
from ragloom.server.middleware import HttpMiddleware
from ragloom.server.responses import error_response

log = logging.getLogger("uvicorn.error")  # the server's error log, formatted by uvicorn

BAD_REQUEST_HINT = "the request fields are listed in /openapi.json and docs/http.md"
_CODE_BY_STATUS = {400: "bad_json", 404: "not_found", 405: "method_not_allowed", 413: "too_large"}


def _is_json(request: Request) -> bool:
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    return kind == "application/json" or (
        kind.startswith("application/") and kind.endswith("+json")
    )


async def on_ragloom_error(request: Request, exc: Exception) -> Response:
    """A deliberate library or server error: its code, message and hint, with its status."""
    assert isinstance(exc, RagloomError)
    return error_response(status_for(exc), exc.code, exc.message, exc.hint_for("http"))


async def on_validation_error(request: Request, exc: Exception) -> Response:
    """400 `bad_json` for a body that is not JSON, 415 for a non-JSON content type, else
    400 `bad_request` naming each wrong field in plain words."""
    assert isinstance(exc, RequestValidationError)
    errors = list(exc.errors())
    if any(e.get("type") == "json_invalid" for e in errors):
        return error_response(400, "bad_json", "request body is not valid JSON")
    body_sent = request.headers.get("content-length", "0") != "0" or (
        "transfer-encoding" in request.headers
    )
    if request.method in ("POST", "PUT", "PATCH") and body_sent and not _is_json(request):
        return error_response(
            415,
            "unsupported_media_type",
            "request body must be JSON",
            "send the header `Content-Type: application/json`",
        )
    details = validation.describe(errors)
    return error_response(
        400, "bad_request", validation.summary(details), BAD_REQUEST_HINT, details=details
    )


async def on_http_error(request: Request, exc: Exception) -> Response:
    """Routing errors (unknown path, wrong method) in the same envelope."""
    assert isinstance(exc, HTTPException)
    if isinstance(exc.__cause__, RecursionError):  # FastAPI's body parse hit the nesting limit
        return error_response(
            400,
            "bad_json",
            "request body is nested too deeply (JSON nests at most about 1,000 levels here)",
            "flatten the body: filters combine with $and/$or lists, nested fields use dots",
        )
    code = _CODE_BY_STATUS.get(exc.status_code, "http_error")
    message = exc.detail if isinstance(exc.detail, str) else f"HTTP {exc.status_code}"
    headers = exc.headers
    if exc.status_code == 405:
        headers = {**(headers or {}), "Allow": ", ".join(allowed_methods(request))}
    return error_response(exc.status_code, code, message, headers=headers)


def _leaf_routes(routes: list[Any]) -> list[Any]:
    """Routes with paths: FastAPI wraps an included router (our routers carry no prefix)."""
    out = []
    for route in routes:
        inner = getattr(route, "original_router", None)
        out.extend(_leaf_routes(inner.routes) if inner is not None else [route])
    return out


def allowed_methods(request: Request) -> list[str]:
    """Every method some route serves at this path: Starlette's own 405 names only the first
    matching route's (`/documents/{id}` has a GET route and a DELETE route)."""
    methods: set[str] = set()
    probe = {**request.scope, "method": "\0"}  # no route serves it: every path match is PARTIAL
    for route in _leaf_routes(request.app.router.routes):
        match, _ = route.matches(probe)
        if match is not Match.NONE:
            methods |= set(getattr(route, "methods", None) or ())
    if "GET" in methods:
        methods.add("HEAD")
    return sorted(methods)


def _internal_error() -> Response:
    return error_response(
        500, "internal", "internal server error", "the server's log has the details"
    )


async def on_unexpected(request: Request, exc: Exception) -> Response:
    """A bug that escaped `CatchAll`: answer a generic 500 (Starlette logs and re-raises)."""
    return _internal_error()


class CatchAll(HttpMiddleware):
    """Turn an unexpected exception into a logged, generic 500 that keeps the connection usable.

    (Starlette's own last-resort handler re-raises to the server, which then drops the
    keep-alive connection and makes a client's next request fail.)
    """

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception:
            log.exception("unhandled error on %s %s", scope.get("method"), scope.get("path"))
            if started:
                raise
            await _internal_error()(scope, receive, send)


def install(app: FastAPI) -> None:
    """Register every handler on the app."""
    app.add_exception_handler(RagloomError, on_ragloom_error)
    app.add_exception_handler(RequestValidationError, on_validation_error)
    app.add_exception_handler(HTTPException, on_http_error)
    app.add_exception_handler(Exception, on_unexpected)
