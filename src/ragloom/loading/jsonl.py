"""JSONL records -> Documents, one record a line, with a configurable field mapping.

Files are read as streams of bounded lines: a line longer than `MAX_RECORD_BYTES` or nested
deeper than `MAX_DEPTH` is a `RecordError` for that line (skipped when lenient), never a
memory blow-up or a `RecursionError`.
"""

from __future__ import annotations

import json
import math
import re
import warnings
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragloom.chunking.code.languages import language_named
from ragloom.errors import DecodeError, RecordError
from ragloom.loading.decode import UTF8, Encoding, StreamDecoder, sniff_encoding
from ragloom.types import Document

MAX_COLLECTION_NAME = 200
MAX_DEPTH = 256  # nesting of arrays and objects in one record
MAX_RECORD_BYTES = 16 * 1024 * 1024  # one line

# A JSON string (escapes included) or a bracket: brackets inside strings do not nest.
_NESTING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')


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


@dataclass(frozen=True)
class Line:
    """One line of a JSONL file: its number, the byte offset of its start (when known) and
    its text (None when it is longer than the record limit)."""

    number: int
    offset: int | None
    text: str | None


def _utf8_lines(
    blocks: Iterable[bytes], path: str, lenient: bool, max_bytes: int
) -> Iterator[Line]:
    """Split UTF-8 bytes into decoded lines, each decoded on its own (exact byte offsets)."""
    buffer = bytearray()
    offset = 0  # file offset of buffer[0]
    number = 1
    too_long = False  # inside a line already known to be too long: drop until its end

    def decoded(raw: bytes) -> str:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            if not lenient:
                raise DecodeError(path, offset + exc.start, exc.reason, number) from None
            text = raw.decode("utf-8", errors="replace")
        return text.removeprefix("\ufeff") if number == 1 else text

    for block in blocks:
        buffer += block
        start = 0
        while True:
            end = buffer.find(b"\n", start)
            if end < 0:
                break
            if too_long:
                too_long = False
            else:
                yield Line(number, offset, decoded(bytes(buffer[start : end + 1])))
            number += 1
            offset += end + 1 - start
            start = end + 1
        del buffer[:start]
        if not too_long and len(buffer) > max_bytes:
            yield Line(number, offset, None)
            too_long = True
        if too_long:  # keep nothing of it: offsets still advance
            offset += len(buffer)
            buffer.clear()
    if buffer and not too_long:
        yield Line(number, offset, decoded(bytes(buffer)))


def _decoded_lines(
    blocks: Iterable[bytes], path: str, encoding: Encoding, lenient: bool, max_chars: int
) -> Iterator[Line]:
    """Lines of a UTF-16/32 file: decoded as a stream, split on newlines (no byte offsets)."""
    decoder = StreamDecoder(path, encoding, lenient)
    carry = ""
    number = 1
    too_long = False

    def split(text: str) -> Iterator[Line]:
        nonlocal carry, number, too_long
        carry += text
        *complete, carry = carry.split("\n")
        for piece in complete:
            if too_long:
                too_long = False
            else:
                yield Line(number, None, piece + "\n")
            number += 1
        if not too_long and len(carry) > max_chars:
            yield Line(number, None, None)
            too_long = True
        if too_long:
            carry = ""

    for block in blocks:
        yield from split(decoder.decode(block))
    yield from split(decoder.decode(b"", final=True))
    if carry and not too_long:
        yield Line(number, None, carry)


def lines_of(
    blocks: Iterable[bytes],
    path: str,
    lenient: bool = False,
    encoding: Encoding = UTF8,
    max_bytes: int = MAX_RECORD_BYTES,
) -> Iterator[Line]:
    """Bounded lines of a file's bytes (UTF-8, or UTF-16/32 with a byte-order mark)."""
    if encoding.codec == "utf-8":
        return _utf8_lines(blocks, path, lenient, max_bytes)
    return _decoded_lines(blocks, path, encoding, lenient, max_bytes)


def _file_blocks(path: Path, size: int = 1024 * 1024) -> Iterator[bytes]:
    with path.open("rb") as handle:
        while block := handle.read(size):
            yield block


def decoded_lines(path: Path, lenient: bool = False) -> Iterator[str]:
    """Stream a file's lines (newline kept), decoding each on its own.

    Invalid UTF-8 raises DecodeError naming the file, the line and the byte offset in the
    file, unless `lenient` (bad bytes become U+FFFD). A leading byte-order mark is dropped.
    """
    blocks = _file_blocks(path)
    first = next(blocks, b"")
    encoding = sniff_encoding(first)

    def all_blocks() -> Iterator[bytes]:
        yield first
        yield from blocks

    for line in lines_of(all_blocks(), str(path), lenient, encoding):
        if line.text is None:
            raise RecordError(str(path), line.number, _too_long(), line.offset)
        yield line.text


def read_jsonl_file(
    path: Path,
    fields: JsonlFields | None = None,
    lenient: bool = False,
    default_id_prefix: str | None = None,
) -> Iterator[Document]:
    """Documents of a JSONL file, read line by line so a large file never sits in memory."""
    blocks = _file_blocks(path)
    first = next(blocks, b"")

    def all_blocks() -> Iterator[bytes]:
        yield first
        yield from blocks

    lines = lines_of(all_blocks(), str(path), lenient, sniff_encoding(first))
    yield from records(lines, str(path), fields, lenient, default_id_prefix)


def read_jsonl(
    lines: Iterable[str],
    path: str,
    fields: JsonlFields | None = None,
    lenient: bool = False,
    default_id_prefix: str | None = None,
) -> Iterator[Document]:
    """Yield one Document per non-blank line; a bad line raises (or is skipped if lenient)."""
    numbered = (Line(n, None, text) for n, text in enumerate(lines, start=1))
    yield from records(numbered, path, fields, lenient, default_id_prefix)


def records(
    lines: Iterable[Line],
    path: str,
    fields: JsonlFields | None = None,
    lenient: bool = False,
    default_id_prefix: str | None = None,
    source: str | None = None,
) -> Iterator[Document]:
    """Documents of numbered lines; a bad line raises `RecordError` (skipped if lenient).

    `path` names the file in messages; `source` (default `path`) is what documents carry.
    """
    fields = fields or JsonlFields()
    for line in lines:
        if line.text is not None and not line.text.strip():
            continue
        try:
            if line.text is None:
                raise RecordError(path, line.number, _too_long(), line.offset)
            record = _parse(line, path)
            where = (line.number, line.offset, path, fields, default_id_prefix, source or path)
            yield record_document(record, *where)
        except RecordError as exc:
            if not lenient:
                raise
            warnings.warn(f"skipped {exc.message}", stacklevel=2)


def _too_long() -> str:
    return f"line is longer than the {MAX_RECORD_BYTES:,}-byte record limit"


def too_deep(text: str, limit: int = MAX_DEPTH) -> bool:
    """True when arrays and objects nest deeper than `limit` (brackets in strings ignored)."""
    if text.count("[") + text.count("{") <= limit:
        return False
    depth = 0
    for match in _NESTING.finditer(text):
        char = match.group()
        if char in "[{":
            depth += 1
            if depth > limit:
                return True
        elif char in "]}":
            depth -= 1
    return False


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"number {text[:40]} is out of range")
    return value


def _storable(value: Any) -> bool:
    """Strings (keys too) encode as UTF-8: JSON's "\\ud800" escapes give lone surrogates."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _parse(line: Line, path: str) -> Any:
    text = line.text or ""
    if too_deep(text):
        raise RecordError(path, line.number, f"nested deeper than {MAX_DEPTH} levels", line.offset)
    try:
        record = json.loads(text, parse_constant=_no_constant, parse_float=_finite)
    except json.JSONDecodeError as exc:
        raise RecordError(
            path, line.number, f"not valid JSON ({exc.msg} at column {exc.colno})", line.offset
        ) from None
    except (ValueError, RecursionError) as exc:
        raise RecordError(path, line.number, f"not valid JSON ({exc})", line.offset) from None
    if ("\\ud" in text or "\\uD" in text) and not _storable(record):
        raise RecordError(
            path, line.number, "holds a lone surrogate escape (not valid Unicode)", line.offset
        )
    return record


def record_document(
    record: Any,
    number: int,
    offset: int | None,
    path: str,
    fields: JsonlFields,
    default_id_prefix: str | None,
    source: str,
) -> Document:
    """One record (a JSON object, a CSV row) as a Document, by the field mapping; a record
    that does not fit it is a `RecordError` naming the line."""

    def bad(reason: str) -> RecordError:
        return RecordError(path, number, reason, offset)

    if not isinstance(record, dict):
        raise bad(f"expected a JSON object, got {type(record).__name__}")
    text = record.get(fields.text)
    if not isinstance(text, str):
        raise bad(f"field {fields.text!r} is missing or not a string")
    if fields.id in record:
        doc_id = _scalar_id(record[fields.id])
        if not doc_id or not doc_id.strip():
            raise bad(f"field {fields.id!r} must be a non-empty string or int")
    elif default_id_prefix is not None:
        doc_id = f"{default_id_prefix}:{number}"
    else:
        raise bad(f"field {fields.id!r} is missing")
    title = record.get(fields.title)
    if title is not None and not isinstance(title, str):
        raise bad(f"field {fields.title!r} must be a string")
    collection = _collection(record, fields.collection, bad)
    used = {fields.id, fields.title, fields.text, fields.collection}
    if fields.metadata is None:
        kept = [k for k in record if k not in used]
    else:
        kept = [k for k in fields.metadata if k in record]
    metadata = {fields.rename.get(k, k): record[k] for k in kept}
    if len(metadata) < len(kept):
        raise bad(f"two fields become one metadata key ({_clash(kept, fields)})")
    language = record.get(fields.language) if fields.language else None
    return Document(
        id=doc_id,
        text=text,
        title=title or None,
        source=source,
        metadata=metadata,
        collection=collection,
        language=language_named(language),
    )


def _scalar_id(value: Any) -> str | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (str, int)):
        return str(value)
    return None


def _clash(kept: list[str], fields: JsonlFields) -> str:
    """`'a' and 'b' both become 'b'`: the first two record fields mapped onto one key."""
    first: dict[str, str] = {}
    for key in kept:
        target = fields.rename.get(key, key)
        if target in first:
            return f"{first[target]!r} and {key!r} both become {target!r}"
        first[target] = key
    return ""


def _collection(record: dict[str, Any], name: str | None, bad: Any) -> str | None:
    """The record's own collection (None: the indexing call's), from field `name`."""
    if name is None or record.get(name) is None:
        return None
    value = record[name]
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_COLLECTION_NAME:
        raise bad(
            f"field {name!r} must be a collection name (a non-empty string of at most "
            f"{MAX_COLLECTION_NAME} characters)"
        )
    return value


def file_records(
    opened: Any,
    first: bytes,
    file: Any,
    lenient: bool,
    fields: JsonlFields | None,
) -> Iterator[Document]:
    """Records of an open JSONL file, read as the caller iterates; closes it at the end."""
    with opened:
        blocks = opened.blocks_after_first()

        def all_blocks() -> Iterator[bytes]:
            yield first
            yield from blocks

        lines = lines_of(all_blocks(), opened.shown, lenient, sniff_encoding(first))
        yield from records(lines, opened.shown, fields, lenient, file.id, file.source)
        opened.check_unchanged()
