"""Bearer-token check as plain ASGI middleware: every path but the open ones needs the token."""

from __future__ import annotations

import hmac

from starlette.types import ASGIApp, Receive, Scope, Send

from ragloom.server.middleware import HttpMiddleware
from ragloom.server.responses import error_response

OPEN_PATHS = frozenset({"/health"})
# The inspector's page and assets hold no data (the page sends the token with its API calls).
OPEN_PREFIXES = ("/ui",)


def _inspector_asset(path: str) -> bool:
    """True for `/ui` and the files under `/ui/`."""
    return any(path == p or path.startswith(p + "/") for p in OPEN_PREFIXES)


def token_matches(header: bytes, token: bytes) -> bool:
    """True when an `Authorization` header value is `Bearer <token>` (constant-time compare)."""
    scheme, _, credentials = header.strip().partition(b" ")
    ok_scheme = scheme.lower() == b"bearer"
    return hmac.compare_digest(credentials.strip(), token) and ok_scheme


class BearerAuth(HttpMiddleware):
    """Answer 401 unless `Authorization: Bearer <token>` matches (compared in constant time)."""

    def __init__(self, app: ASGIApp, token: str, open_paths: frozenset[str] = OPEN_PATHS) -> None:
        super().__init__(app)
        self.token = token.encode("utf-8")
        self.open_paths = open_paths

    def authorized(self, scope: Scope) -> bool:
        """True when the request carries the right bearer token."""
        header = b""
        for name, value in scope.get("headers", ()):
            if name == b"authorization":
                header = value
        return token_matches(header, self.token)

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope["path"]
        if path in self.open_paths or _inspector_asset(path) or self.authorized(scope):
            await self.app(scope, receive, send)
            return
        response = error_response(
            401,
            "unauthorized",
            "missing or wrong bearer token",
            "send the header `Authorization: Bearer <token>` with the server's token",
            headers={"WWW-Authenticate": "Bearer"},
        )
        await response(scope, receive, send)
