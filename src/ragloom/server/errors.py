"""HTTP error vocabulary shared by the server and the client: error classes and status codes.

Kept free of web-framework imports so that `ragloom.Client` can use it cheaply.
"""

from __future__ import annotations

from ragloom import errors as library_errors
from ragloom.errors import InputError, InvalidRequest, NotFound, RagloomError, StoreError


class MalformedJSON(InputError):
    """The request body is not valid JSON (HTTP 400)."""

    code = "bad_json"


class Unauthorized(RagloomError):
    """The bearer token is missing or wrong (HTTP 401)."""

    code = "unauthorized"


class Forbidden(RagloomError):
    """The request names a path the server may not read (HTTP 403)."""

    code = "forbidden"


class PayloadTooLarge(RagloomError):
    """The request body exceeds the server's limit (HTTP 413)."""

    code = "too_large"


class MisdirectedHost(RagloomError):
    """The request's `Host` header names a host this server does not answer for (HTTP 421)."""

    code = "bad_host"


class ServerError(RagloomError):
    """The server failed unexpectedly; details stay in the server's log (HTTP 500)."""

    code = "internal"


# Error code -> HTTP status. Library codes come first; unknown codes fall back by class.
STATUS_BY_CODE: dict[str, int] = {
    "bad_json": 400,
    "bad_request": 400,
    "unauthorized": 401,
    "forbidden": 403,
    "file_refused": 403,
    "not_found": 404,
    "method_not_allowed": 405,
    "too_large": 413,
    "bad_host": 421,
    "unsupported_media_type": 415,
    "bad_input": 400,
    "filter_type": 400,
    "invalid_utf8": 400,
    "bad_record": 400,
    "embedding_mismatch": 409,
    "id_conflict": 409,
    "file_changed": 409,
    "file_too_large": 422,
    "unsupported_format": 422,
    "unreadable_document": 422,
    "password_protected": 422,
    "no_text_layer": 422,
    "archive_too_large": 422,
    "convert_timeout": 422,
    "needs_vectors": 409,
    "writer_busy": 409,
    "internal": 500,
    "embedding_error": 502,
    "embed_failed": 502,
    "llm_error": 502,
    "llm_failed": 502,
    "rerank_error": 502,
    "rerank_failed": 502,
    "store_unavailable": 503,
    "storage_error": 503,
    "read_only": 503,
    "shard_unavailable": 503,
    "storage_full": 507,
    "offline": 503,
    "model_unavailable": 503,
    "timeout": 504,
    "read_timeout": 504,
}


def _library_classes() -> dict[str, type[RagloomError]]:
    """Every error class `ragloom.errors` defines with the plain (message, hint) signature."""
    found: dict[str, type[RagloomError]] = {}
    for value in vars(library_errors).values():
        if (
            isinstance(value, type)
            and issubclass(value, RagloomError)
            and "__init__" not in vars(value)  # DecodeError/RecordError need file positions
        ):
            found.setdefault(value.code, value)
    return found


# Error code -> the class a client raises for it (codes not listed raise by status).
CLASS_BY_CODE: dict[str, type[RagloomError]] = {
    **_library_classes(),
    "invalid_utf8": InputError,
    "bad_record": InputError,
    "not_found": NotFound,
    "bad_json": MalformedJSON,
    "bad_request": InvalidRequest,
    "unsupported_media_type": MalformedJSON,
    "unauthorized": Unauthorized,
    "forbidden": Forbidden,
    "too_large": PayloadTooLarge,
    "bad_host": MisdirectedHost,
    "internal": ServerError,
}


def status_for(error: RagloomError) -> int:
    """HTTP status for a ragloom error: by its code, else by its class, else 500."""
    if error.code in STATUS_BY_CODE:
        return STATUS_BY_CODE[error.code]
    if isinstance(error, NotFound):
        return 404
    if isinstance(error, InputError):
        return 400
    if isinstance(error, StoreError):
        return 503
    return 500


def error_from_payload(status: int, payload: object) -> RagloomError:
    """Rebuild a typed error from a server's `{"ok": false, "error": "<message>", "code",
    "hint"}` answer (anything else becomes an error named by the status alone)."""
    body = payload if isinstance(payload, dict) else {}
    code = str(body.get("code") or _code_for_status(status))
    message = body.get("error")
    message = message if isinstance(message, str) and message else f"HTTP {status}"
    hint = body.get("hint")
    cls = CLASS_BY_CODE.get(code) or _class_for_status(status)
    exc = cls(message, str(hint) if hint else None)
    exc.code = code  # keep the server's exact code (e.g. invalid_utf8 on an InputError)
    exc.status = status  # type: ignore[attr-defined]
    return exc


def _code_for_status(status: int) -> str:
    for code, known in STATUS_BY_CODE.items():
        if known == status:
            return code
    return "error"


def _class_for_status(status: int) -> type[RagloomError]:
    return CLASS_BY_CODE.get(_code_for_status(status), RagloomError)
