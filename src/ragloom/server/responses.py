"""Build the JSON error envelope `{"ok": false, "error": {...}}` every failure answers with."""

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
    """A typed JSON error with its HTTP status."""
    error: dict[str, Any] = {"code": code, "message": message}
    if hint:
        error["hint"] = hint
    if details:
        error["details"] = details
    return JSONResponse({"ok": False, "error": error}, status_code=status, headers=headers)
