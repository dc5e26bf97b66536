"""Host-header check as plain ASGI middleware: the defence against DNS rebinding.

A web page can make a browser send requests to 127.0.0.1 under a name its attacker controls
(rebinding that name to 127.0.0.1 after the page loaded); the browser then treats the answer
as the page's own. The request still carries that name in `Host`, so answering only for
loopback names, the bound address and names configured with `--allow-host` shuts it out
before any handler (or the token check) runs.
"""

from __future__ import annotations

from collections.abc import Iterable

from starlette.types import ASGIApp, Receive, Scope, Send

from ragloom.server.middleware import HttpMiddleware
from ragloom.server.responses import error_response

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


def host_name(value: str) -> str | None:
    """The name in a `Host` value without its port (IPv6 without brackets); None if malformed."""
    value = value.strip().lower()
    if value.startswith("["):
        name, bracket, rest = value[1:].partition("]")
        if not bracket or (rest and not (rest.startswith(":") and rest[1:].isdigit())):
            return None
        return name or None
    name, colon, port = value.rpartition(":")
    if not colon:
        name = value
    elif not port.isdigit() or ":" in name:
        return None
    name = name.removesuffix(".")
    return name or None


def allowed_names(bound: str, extra: Iterable[str] = ()) -> frozenset[str]:
    """Loopback names, the bound address and the configured names (normalised)."""
    names = set(LOOPBACK_NAMES)
    for raw in (bound, *extra):
        raw = raw.strip().lower()
        if raw == "*":
            names.add("*")
            continue
        bare_ipv6 = raw.count(":") > 1 and not raw.startswith("[")
        name = host_name(f"[{raw}]" if bare_ipv6 else raw)
        if name:
            names.add(name)
    return frozenset(names)


class HostCheck(HttpMiddleware):
    """Answer 421 to any request whose `Host` is not an accepted name."""

    def __init__(self, app: ASGIApp, names: frozenset[str]) -> None:
        super().__init__(app)
        self.names = names
        self.any = "*" in names

    def accepts(self, scope: Scope) -> tuple[bool, str]:
        values = [v for k, v in scope.get("headers", ()) if k == b"host"]
        if len(values) != 1:
            return False, ""
        raw = values[0].decode("latin-1")
        name = host_name(raw)
        return (self.any or name in self.names) and name is not None, raw

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        ok, raw = self.accepts(scope)
        if ok:
            await self.app(scope, receive, send)
            return
        shown = f"host {raw[:200]!r}" if raw else "a request without one Host header"
        response = error_response(
            421,
            "bad_host",
            f"this server does not answer for {shown}",
            "use http://127.0.0.1:PORT or http://localhost:PORT, or start the server with"
            " --allow-host NAME",
            headers={"Connection": "close"},
        )
        await response(scope, receive, send)
