"""JSON Schema of what each tool returns (`search`, `get_document`, `context`), declared
once for the MCP tools' `outputSchema` (a client checks the structured answers against
them) and for anyone who reads a tool's answer."""

from __future__ import annotations

from typing import Any

_TEXT = {"type": "string"}
_NAME = {"type": ["string", "null"]}
_COUNT = {"type": "integer", "minimum": 0}


def _object(properties: dict[str, Any], optional: tuple[str, ...] = ()) -> dict[str, Any]:
    """An object with these properties, all required but `optional`."""
    return {
        "type": "object",
        "properties": properties,
        "required": [name for name in properties if name not in optional],
    }


SEARCH_HIT = _object(
    {
        "rank": {"type": "integer", "minimum": 1},
        "document_id": _TEXT,
        "chunk_id": _TEXT,
        "collection": _TEXT,
        "title": _NAME,
        "source": _NAME,
        "place": _NAME,
        "score": {"type": "number"},
        "tokens": {"type": ["integer", "null"]},
        "start": _COUNT,
        "end": _COUNT,
        "text": _TEXT,
    }
)

PASSAGE = _object(
    {
        "number": {"type": "integer", "minimum": 1},
        "collection": _TEXT,
        "document_id": _TEXT,
        "source": _NAME,
        "title": _NAME,
        "label": _NAME,
        "start": _COUNT,
        "end": _COUNT,
        "chunk_ids": {"type": "array", "items": _TEXT},
        "tokens": _COUNT,
        "truncated": {"type": "boolean"},
        "place": _NAME,
        "page": {"type": ["integer", "null"]},
        "pages": {"type": ["array", "null"], "items": {"type": "integer"}},
        "section": _NAME,
    },
    optional=("place", "page", "pages", "section"),
)

OUTPUT_SCHEMAS: dict[str, dict[str, Any]] = {
    "search": _object(
        {
            "results": {"type": "array", "items": SEARCH_HIT},
            "total_tokens": _COUNT,
            "degraded": {"type": "boolean"},
        }
    ),
    "get_document": _object(
        {
            "document_id": _TEXT,
            "collection": _TEXT,
            "start": _COUNT,
            "end": _COUNT,
            "length": _COUNT,
            "truncated": {"type": "boolean"},
            "text": _TEXT,
        }
    ),
    "context": _object(
        {
            "text": _TEXT,
            "tokens": _COUNT,
            "passages": {"type": "array", "items": PASSAGE},
            "note": _NAME,
        },
        optional=("note",),
    ),
}
