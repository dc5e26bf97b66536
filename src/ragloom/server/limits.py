"""Request body size limit as plain ASGI middleware (declared and streamed bodies alike)."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ragloom.server.middleware import HttpMiddleware
from ragloom.server.responses import error_response


class BodyLimit(HttpMiddleware):
    """Answer 413 when a body exceeds `max_body` bytes, before the app sees any of it.

    A `Content-Length` over the limit is refused without reading; a body without one
    (chunked transfer) is counted as it streams in. Accepted bodies are buffered and replayed.
    """

    def __init__(self, app: ASGIApp, max_body: int) -> None:
        super().__init__(app)
        self.max_body = max_body

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        declared = None
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    await error_response(400, "bad_request", "invalid Content-Length header")(
                        scope, receive, send
                    )
                    return
        if declared is not None and declared > self.max_body:
            await self._refuse(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # client went away: let the app see it
                await self.app(scope, _replay(chunks, message, receive), send)
                return
            body = message.get("body", b"")
            size += len(body)
            if size > self.max_body:
                await self._refuse(scope, receive, send)
                return
            if body:
                chunks.append(body)
            if not message.get("more_body", False):
                break
        await self.app(scope, _replay(chunks, None, receive), send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = error_response(
            413,
            "too_large",
            f"request body is larger than this server's limit of {self.max_body} bytes",
            "send fewer documents per request, or index a path; the limit is --max-body",
            headers={"Connection": "close"},
        )
        await response(scope, receive, send)


def _replay(chunks: list[bytes], last: Message | None, receive: Receive) -> Receive:
    """A `receive` that hands over the buffered body once, then defers to the real one."""
    pending: list[Message] = [
        {"type": "http.request", "body": b"".join(chunks), "more_body": False}
    ]
    if last is not None:
        pending = [last]

    async def replay() -> Message:
        if pending:
            return pending.pop()
        return await receive()

    return replay
