"""Word (DOCX) -> paragraphs and tables in document order (python-docx), headings as
sections, tables as rows of text, footnotes at the end. The zip is checked first
(`ragloom.convert.archive`): a bomb is named, entity declarations refused."""

from __future__ import annotations

import io
import re

from ragloom.convert.archive import SafeZip
from ragloom.convert.builder import Converted, TextBuilder
from ragloom.errors import DocumentError

_HEADING = re.compile(r"^heading\s*(\d)", re.IGNORECASE)
_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"


def _xml_parts(archive: SafeZip) -> None:
    """Every XML part passes the entity check before python-docx parses any of them."""
    for part in sorted(archive.names):
        if part.endswith((".xml", ".rels")):
            archive.read_xml(part)


def _level(paragraph: object) -> int:
    style = getattr(getattr(paragraph, "style", None), "name", "") or ""
    if style.lower() == "title":
        return 1
    found = _HEADING.match(style)
    return int(found.group(1)) if found else 0


def _table_rows(table: object) -> list[str]:
    rows = []
    for row in table.rows:  # type: ignore[attr-defined]
        cells: list[str] = []
        for cell in row.cells:
            text = " ".join(cell.text.split())
            if text and (not cells or cells[-1] != text):  # a merged cell shows once
                cells.append(text)
        if cells:
            rows.append(" | ".join(cells))
    return rows


def _footnotes(archive: SafeZip) -> list[tuple[str, str]]:
    if "word/footnotes.xml" not in archive.names:
        return []
    from lxml import etree

    parser = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False)
    root = etree.fromstring(archive.read_xml("word/footnotes.xml"), parser)
    notes = []
    for note in root.iter(f"{_W}footnote"):
        number = note.get(f"{_W}id", "")
        if number.lstrip("-").isdigit() and int(number) >= 1:
            text = " ".join("".join(t.text or "" for t in note.iter(f"{_W}t")).split())
            if text:
                notes.append((number, text))
    return notes


def convert_docx(data: bytes, name: str) -> Converted:
    """A Word document's text: headings as sections, tables as rows, footnotes last."""
    archive = SafeZip(data, name)
    _xml_parts(archive)
    import docx

    try:
        document = docx.Document(io.BytesIO(data))
    except Exception as exc:
        raise DocumentError(f"{name} is not a readable Word document ({exc})") from None
    builder = TextBuilder("page")
    from docx.table import Table

    for item in document.iter_inner_content():
        if isinstance(item, Table):
            for row in _table_rows(item):
                builder.block(row)
            continue
        level = _level(item)
        if level:
            builder.heading(item.text, level)
        else:
            builder.block(item.text)
    notes = _footnotes(archive)
    if notes:
        builder.heading("Footnotes", 1)
        for number, text in notes:
            builder.block(f"[{number}] {text}")
    core = document.core_properties
    metadata = {k: v for k, v in (("author", core.author),) if v}
    return builder.build(core.title or None, metadata)
