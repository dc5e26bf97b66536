"""The shared frame of the sidecar's ASGI middleware: HTTP requests handled, the rest passed on."""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send


class HttpMiddleware:
    """ASGI middleware that acts on HTTP requests only (`handle`). Lifespan and any other
    non-HTTP scopes carry no path and no headers: they pass untouched, or the app's startup
    (warm-up, vector backfill) and shutdown never run."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        await self.handle(scope, receive, send)

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one HTTP request (the subclass's job)."""
        raise NotImplementedError
