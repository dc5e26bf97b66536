"""The inspector page at `/ui`: static files shipped in the package, no build step, no CDN.

The page calls the same JSON API as any client (`/stats`, `/query`, `/documents/{id}`, and
`/ask` streamed for its Ask box), so it needs no endpoint of its own; it is served without
the token (it holds no data) and sends the token the user types with every API call.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

from fastapi import APIRouter
from starlette.responses import RedirectResponse, Response

from ragloom.errors import NotFound

ASSETS = {
    "index.html": "text/html; charset=utf-8",
    "inspector.js": "text/javascript; charset=utf-8",
    "ask.js": "text/javascript; charset=utf-8",
    "inspector.css": "text/css; charset=utf-8",
}
# Only this origin's own files and API: no inline script, no third-party anything.
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; "
    "frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


@lru_cache(maxsize=len(ASSETS))
def asset(name: str) -> bytes:
    """The bytes of one shipped asset."""
    return (resources.files("ragloom.server") / "static" / name).read_bytes()


def _serve(name: str) -> Response:
    if name not in ASSETS:
        raise NotFound(f"no inspector file {name!r}", f"files: {', '.join(sorted(ASSETS))}")
    return Response(asset(name), media_type=ASSETS[name], headers=SECURITY_HEADERS)


def build_inspector() -> APIRouter:
    """Routes of the inspector page and its assets (left out of the OpenAPI schema)."""
    router = APIRouter(include_in_schema=False)

    @router.get("/ui")
    def page() -> Response:
        return _serve("index.html")

    @router.get("/ui/")
    def page_slash() -> Response:
        return RedirectResponse("/ui", status_code=308)

    @router.get("/ui/{name}")
    def file(name: str) -> Response:
        return _serve(name)

    return router
