"""CSV and TSV files as records, one a row, as JSONL records are: a text column (the field
mapping's `text`, else the column holding the most text) and the other columns as metadata
(numbers as numbers). Read as a stream of decoded lines, so a large table never sits in
memory; a row the mapping cannot take is a `RecordError` naming its line."""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable, Iterator
from dataclasses import replace
from typing import Any

from ragloom.errors import RecordError
from ragloom.loading.jsonl import JsonlFields, record_document
from ragloom.types import Document

_INTEGER = re.compile(r"-?(?:0|[1-9]\d{0,17})")
_DECIMAL = re.compile(r"-?(?:0|[1-9]\d*)\.\d+(?:[eE][-+]?\d+)?")
SAMPLE_ROWS = 50  # rows looked at to find the text column


def _lines(pieces: Iterable[str]) -> Iterator[str]:
    carry = ""
    for piece in pieces:
        carry += piece
        *complete, carry = carry.split("\n")
        for line in complete:
            yield line + "\n"
    if carry:
        yield carry


def _value(text: str) -> Any:
    if _INTEGER.fullmatch(text):
        return int(text)
    if _DECIMAL.fullmatch(text):
        return float(text)
    return text


def _text_column(header: list[str], sample: list[list[str]], wanted: str) -> str:
    if wanted in header:
        return wanted
    size = [0] * len(header)
    for row in sample:
        for i, cell in enumerate(row[: len(header)]):
            size[i] += len(cell)
    return header[max(range(len(header)), key=lambda i: size[i])]


def rows_to_documents(
    pieces: Iterable[str],
    path: str,
    delimiter: str,
    fields: JsonlFields | None,
    lenient: bool,
    file_id: str,
    source: str,
) -> Iterator[Document]:
    """Documents of a table's decoded text: rows after the header line, ids `{file_id}:N`
    (N the row's line) unless an id column is mapped."""
    fields = fields or JsonlFields()
    reader = csv.reader(_lines(pieces), delimiter=delimiter)
    try:
        header = [h.strip() for h in next(reader, [])]
    except csv.Error as exc:
        raise RecordError(path, 1, f"not a readable table header ({exc})", None) from None
    if not any(header):
        return
    buffered: list[tuple[int, list[str]]] = []
    rows = iter(lambda: _next_row(reader, path, lenient), None)
    for row in rows:
        buffered.append(row)
        if len(buffered) >= SAMPLE_ROWS:
            break
    column = _text_column(header, [r for _, r in buffered], fields.text)
    mapping = replace(fields, text=column)
    for number, row in _chain(buffered, rows):
        if not any(cell.strip() for cell in row):
            continue
        record = {name: _value(cell) for name, cell in zip(header, row) if name}
        record[column] = str(record.get(column, ""))
        try:
            yield record_document(record, number, None, path, mapping, file_id, source)
        except RecordError as exc:
            if not lenient:
                raise
            import warnings

            warnings.warn(f"skipped {exc.message}", stacklevel=2)


def _chain(first: list, rest: Iterator) -> Iterator:
    yield from first
    yield from rest


def _next_row(reader: Any, path: str, lenient: bool) -> tuple[int, list[str]] | None:
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return None
        except csv.Error as exc:
            if not lenient:
                raise RecordError(
                    path, reader.line_num, f"not a readable row ({exc})", None
                ) from None
            continue
        return reader.line_num, row


def table_documents(
    opened: Any, pieces: Iterable[str], file: Any, lenient: bool, fields: JsonlFields | None
) -> Iterator[Document]:
    """Rows of an open CSV/TSV file (`pieces`: its decoded text), read as the caller
    iterates; closes the file at the end."""
    delimiter = "\t" if file.path.suffix.lower() == ".tsv" else ","
    with opened:
        yield from rows_to_documents(
            pieces, opened.shown, delimiter, fields, lenient, file.id, file.source
        )
