"""PowerPoint (PPTX) -> one unit and one section per slide (python-pptx): the slide's
title, its text boxes and tables in order, then its speaker notes. The zip is checked first
(`ragloom.convert.archive`)."""

from __future__ import annotations

import io

from ragloom.convert.archive import SafeZip
from ragloom.convert.builder import Converted, TextBuilder
from ragloom.errors import DocumentError


def _shape_blocks(shape: object) -> list[str]:
    """Text of one shape: paragraphs of a text frame, rows of a table, shapes of a group."""
    out: list[str] = []
    if getattr(shape, "shape_type", None) == 6:  # a group: its shapes in order
        for inner in shape.shapes:  # type: ignore[attr-defined]
            out.extend(_shape_blocks(inner))
    elif getattr(shape, "has_table", False):
        for row in shape.table.rows:  # type: ignore[attr-defined]
            cells = [" ".join(c.text.split()) for c in row.cells]
            if any(cells):
                out.append(" | ".join(c for c in cells if c))
    elif getattr(shape, "has_text_frame", False):
        for paragraph in shape.text_frame.paragraphs:  # type: ignore[attr-defined]
            text = "".join(run.text for run in paragraph.runs) or paragraph.text
            if text.strip():
                out.append(text)
    return out


def convert_pptx(data: bytes, name: str) -> Converted:
    """A deck's text, slide by slide: title as the section, body, then speaker notes."""
    archive = SafeZip(data, name)
    for part in sorted(archive.names):
        if part.endswith((".xml", ".rels")):
            archive.read_xml(part)
    import pptx

    try:
        deck = pptx.Presentation(io.BytesIO(data))
    except Exception as exc:
        raise DocumentError(f"{name} is not a readable PowerPoint file ({exc})") from None
    builder = TextBuilder("slide")
    for number, slide in enumerate(deck.slides, start=1):
        builder.start_unit()
        title_shape = slide.shapes.title
        title = " ".join(title_shape.text.split()) if title_shape is not None else ""
        if title:
            builder.heading(title, 1)
        else:
            builder.section(f"Slide {number}", 1)
        for shape in slide.shapes:
            if title_shape is not None and shape.shape_id == title_shape.shape_id:
                continue
            for text in _shape_blocks(shape):
                builder.block(text)
        if slide.has_notes_slide:
            notes = slide.notes_slide.notes_text_frame
            if notes is not None and notes.text.strip():
                builder.block("Notes: " + notes.text)
    deck_title: str | None = deck.core_properties.title or None
    return builder.build(deck_title, {"slides": len(deck.slides)})
