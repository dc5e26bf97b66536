"""Jupyter notebooks -> one unit per cell: Markdown cells as prose (their headings open
sections), code cells as code (chunked by the code chunker), short text outputs kept under
their cell."""

from __future__ import annotations

import json
import re

from ragloom.convert.builder import Converted, TextBuilder
from ragloom.errors import DocumentError

MAX_OUTPUT_CHARS = 2000  # a longer output (a data dump) is left out
_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")


def _source(value: object) -> str:
    if isinstance(value, list):
        return "".join(v for v in value if isinstance(v, str))
    return value if isinstance(value, str) else ""


def _outputs(cell: dict) -> list[str]:
    kept = []
    for output in cell.get("outputs") or []:
        if not isinstance(output, dict):
            continue
        if output.get("output_type") == "stream":
            text = _source(output.get("text"))
        else:
            data = output.get("data")
            text = _source(data.get("text/plain")) if isinstance(data, dict) else ""
        if text.strip() and len(text) <= MAX_OUTPUT_CHARS:
            kept.append(text)
    return kept


def _markdown(builder: TextBuilder, text: str) -> str | None:
    """A Markdown cell: heading lines open sections; returns its first heading."""
    first = None
    paragraph: list[str] = []
    for line in text.splitlines():
        found = _HEADING.match(line)
        if found:
            builder.block("\n".join(paragraph))
            paragraph = []
            builder.heading(found.group(2), len(found.group(1)))
            first = first or found.group(2)
        elif not line.strip():
            builder.block("\n".join(paragraph))
            paragraph = []
        else:
            paragraph.append(line)
    builder.block("\n".join(paragraph))
    return first


def _language(notebook: dict) -> str:
    found = notebook.get("metadata")
    meta: dict = found if isinstance(found, dict) else {}
    for key in ("kernelspec", "language_info"):
        part = meta.get(key)
        name = part.get("language") or part.get("name") if isinstance(part, dict) else None
        if isinstance(name, str) and name.strip():
            return name.strip().lower()
    return "python"


def convert_notebook(data: bytes, name: str) -> Converted:
    """A notebook's cells in order, each a unit ("markdown", "code" or "raw")."""
    try:
        notebook = json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise DocumentError(f"{name} is not a readable notebook (not JSON: {exc})") from None
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    if not isinstance(cells, list):
        raise DocumentError(f"{name} is not a notebook (no list of cells)")
    language = _language(notebook)
    builder = TextBuilder("cell", language)
    title = None
    for number, cell in enumerate(cells, start=1):
        if not isinstance(cell, dict):
            continue
        kind = cell.get("cell_type") if isinstance(cell.get("cell_type"), str) else "raw"
        builder.start_unit("code" if kind == "code" else "markdown", number)
        text = _source(cell.get("source"))
        if kind == "markdown":
            title = title or _markdown(builder, text)
        elif kind == "code":
            builder.block(text, clean=False)
            outputs = _outputs(cell)
            if outputs:  # under the same cell number, chunked as prose (not parsed as code)
                builder.start_unit("output", number)
                for output in outputs:
                    builder.block(output, clean=False)
        else:
            builder.block(text)
    return builder.build(title, {"cells": len(cells), "language": language})
