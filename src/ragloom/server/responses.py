"""JSON responses, and the error envelope every failure answers with:
`{"ok": false, "error": "<message>", "code": "...", "hint": "..."}`."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from starlette import responses


def _plain(value: Any) -> Any:
    """Turn numpy scalars and arrays (and other `.tolist()`/`.item()` values) into JSON."""
    for method in ("item", "tolist"):
        if hasattr(value, method):
            return getattr(value, method)()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


class JSONResponse(responses.JSONResponse):
    """Compact UTF-8 JSON that also accepts numpy numbers; NaN/Infinity are refused."""

    def render(self, content: Any) -> bytes:
        return json.dumps(
            content, ensure_ascii=False, allow_nan=False, separators=(",", ":"), default=_plain
        ).encode("utf-8")


def error_response(
    status: int,
    code: str,
    message: str,
    hint: str | None = None,
    details: list[dict[str, Any]] | None = None,
    headers: Mapping[str, str] | None = None,
) -> JSONResponse:
    """A typed JSON error with its HTTP status: `error` is the plain message (a string, so
    that a client decoding `error: String?` reads it as is), `code` and `hint` beside it;
    `details` lists the wrong fields of a bad request."""
    body: dict[str, Any] = {"ok": False, "error": message, "code": code, "hint": hint}
    if details:
        body["details"] = details
    return JSONResponse(body, status_code=status, headers=headers)
