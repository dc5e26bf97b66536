"""JSONL records -> Documents, one record a line, with a configurable field mapping."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragloom.chunking.code.languages import language_named
from ragloom.errors import DecodeError, RecordError
from ragloom.models import Document

MAX_COLLECTION_NAME = 200


@dataclass(frozen=True)
class JsonlFields:
    """Which record fields hold the id, title and text; `metadata=None` keeps all others.

    `collection` names a field that routes each record to a collection of its own (a
    record without it goes to the collection of the indexing call); it is not metadata.
    `rename` maps record fields to the metadata keys they become (`{"ios_version":
    "ios_version_min"}`). `language` names the field whose value, when it is a code
    language ("swift", "python", ...), gets the record's text chunked as code.
    """

    id: str = "id"
    title: str = "title"
    text: str = "text"
    metadata: tuple[str, ...] | None = None
    collection: str | None = None
    rename: Mapping[str, str] = field(default_factory=dict)
    language: str | None = "language"


def decoded_lines(path: Path, lenient: bool = False) -> Iterator[str]:
    """Stream a file's lines (newline kept), decoding each from UTF-8 on its own.

    Invalid UTF-8 raises DecodeError naming the file, the line and the byte offset in the
    file, unless `lenient` (bad bytes become U+FFFD). A leading BOM is dropped.
    """
    offset = 0
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                if not lenient:
                    reason = f"line {number}: {exc.reason}"
                    raise DecodeError(str(path), offset + exc.start, reason) from None
                line = raw.decode("utf-8", errors="replace")
            if number == 1:
                line = line.removeprefix("\ufeff")
            offset += len(raw)
            yield line


def read_jsonl_file(
    path: Path,
    fields: JsonlFields | None = None,
    lenient: bool = False,
    default_id_prefix: str | None = None,
) -> Iterator[Document]:
    """Documents of a JSONL file, read line by line so a large file never sits in memory."""
    yield from read_jsonl(
        decoded_lines(path, lenient), str(path), fields, lenient, default_id_prefix
    )


def _scalar_id(value: Any) -> str | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (str, int)):
        return str(value)
    return None


def read_jsonl(
    lines: Iterable[str],
    path: str,
    fields: JsonlFields | None = None,
    lenient: bool = False,
    default_id_prefix: str | None = None,
) -> Iterator[Document]:
    """Yield one Document per non-blank line; a bad line raises (or is skipped if lenient)."""
    fields = fields or JsonlFields()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            yield _record_to_document(line, number, path, fields, default_id_prefix)
        except RecordError as exc:
            if not lenient:
                raise
            warnings.warn(f"skipped {exc.message}", stacklevel=2)


def _record_to_document(
    line: str, number: int, path: str, fields: JsonlFields, default_id_prefix: str | None
) -> Document:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        raise RecordError(
            path, number, f"not valid JSON ({exc.msg} at column {exc.colno})"
        ) from None
    if not isinstance(record, dict):
        raise RecordError(path, number, f"expected a JSON object, got {type(record).__name__}")
    text = record.get(fields.text)
    if not isinstance(text, str):
        raise RecordError(path, number, f"field {fields.text!r} is missing or not a string")
    if fields.id in record:
        doc_id = _scalar_id(record[fields.id])
        if not doc_id:
            raise RecordError(
                path, number, f"field {fields.id!r} must be a non-empty string or int"
            )
    elif default_id_prefix is not None:
        doc_id = f"{default_id_prefix}:{number}"
    else:
        raise RecordError(path, number, f"field {fields.id!r} is missing")
    title = record.get(fields.title)
    if title is not None and not isinstance(title, str):
        raise RecordError(path, number, f"field {fields.title!r} must be a string")
    collection = _collection(record, fields.collection, number, path)
    used = {fields.id, fields.title, fields.text, fields.collection}
    if fields.metadata is None:
        kept = [k for k in record if k not in used]
    else:
        kept = [k for k in fields.metadata if k in record]
    metadata = {fields.rename.get(k, k): record[k] for k in kept}
    if len(metadata) < len(kept):
        raise RecordError(
            path, number, f"two fields become one metadata key ({_clash(kept, fields)})"
        )
    language = record.get(fields.language) if fields.language else None
    return Document(
        id=doc_id,
        text=text,
        title=title or None,
        source=path,
        metadata=metadata,
        collection=collection,
        language=language_named(language),
    )


def _clash(kept: list[str], fields: JsonlFields) -> str:
    """`'a' and 'b' both become 'b'`: the first two record fields mapped onto one key."""
    first: dict[str, str] = {}
    for key in kept:
        target = fields.rename.get(key, key)
        if target in first:
            return f"{first[target]!r} and {key!r} both become {target!r}"
        first[target] = key
    return ""


def _collection(record: dict[str, Any], name: str | None, number: int, path: str) -> str | None:
    """The record's own collection (None: the indexing call's), from field `name`."""
    if name is None or record.get(name) is None:
        return None
    value = record[name]
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_COLLECTION_NAME:
        raise RecordError(
            path,
            number,
            f"field {name!r} must be a collection name (a non-empty string of at most "
            f"{MAX_COLLECTION_NAME} characters)",
        )
    return value
