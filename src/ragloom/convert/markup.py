"""HTML and XHTML element trees -> blocks of text (headings, paragraphs, list items, table
rows, code), for the HTML fallback and EPUB chapters. Parsing is lxml's HTML parser, which
expands no entity a document declares."""

from __future__ import annotations

import re
from collections.abc import Iterator

from ragloom.convert.builder import TextBuilder

HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
BLOCKS = {
    "p", "div", "section", "article", "main", "li", "dd", "dt", "blockquote", "pre",
    "tr", "table", "ul", "ol", "dl", "figure", "figcaption", "header", "footer", "nav",
    "aside", "form", "fieldset", "details", "summary", "address", "body", "html", "center",
    "caption", "thead", "tbody", "tfoot", *HEADINGS,
}  # fmt: skip
NEVER = {"script", "style", "noscript", "template", "svg", "math", "head", "iframe", "object"}
BOILERPLATE = {"nav", "header", "footer", "aside", "form", "button", "select", "dialog"}
_XML_DECLARATION = re.compile(r"^\s*<\?xml[^>]*\?>")
_CHROME = re.compile(r"cookie|consent|banner|navbar|menu|sidebar|breadcrumb|footer|share", re.I)


def parse_html(text: str) -> object:
    """An lxml.html tree of `text` (never fails: an empty document at worst)."""
    import lxml.html

    text = _XML_DECLARATION.sub("", text, count=1)  # lxml refuses one in a str
    try:
        return lxml.html.document_fromstring(text or "<html></html>")
    except Exception:
        return lxml.html.document_fromstring("<html></html>")


def _tag(element: object) -> str:
    tag = getattr(element, "tag", "")
    return tag.rsplit("}", 1)[-1].lower() if isinstance(tag, str) else ""


def drop_chrome(root: object) -> None:
    """Remove what is never content (scripts, styles) and page chrome (navigation, header,
    footer, cookie banners) from a tree, in place."""
    doomed = []
    for element in root.iter():  # type: ignore[attr-defined]
        tag = _tag(element)
        if not tag:
            doomed.append(element)  # comments and processing instructions
        elif (
            tag in NEVER
            or tag in BOILERPLATE
            or _CHROME.search(f"{element.get('id', '')} {element.get('class', '')}")
        ):
            doomed.append(element)
    for element in doomed:
        parent = element.getparent()
        if parent is not None:
            element.drop_tree() if hasattr(element, "drop_tree") else parent.remove(element)


def blocks(element: object) -> Iterator[tuple[str, int, str]]:
    """(kind, level, text) of a tree in document order: kind "heading" (level 1-6),
    "code", "row" (a table row, cells joined by " | ") or "text"."""
    tag = _tag(element)
    if tag in NEVER:
        return
    if tag in HEADINGS:
        yield "heading", HEADINGS[tag], _text(element)
        return
    if tag == "pre":
        yield "code", 0, "".join(element.itertext())  # type: ignore[attr-defined]
        return
    if tag == "tr":
        cells = [_text(c) for c in element if _tag(c) in ("td", "th")]  # type: ignore[attr-defined]
        yield "row", 0, " | ".join(c for c in cells if c)
        return
    inline: list[str] = [element.text or ""]  # type: ignore[attr-defined]
    for child in element:  # type: ignore[attr-defined]
        child_tag = _tag(child)
        if child_tag in BLOCKS or child_tag in ("tr", "pre"):
            if "".join(inline).strip():
                yield "text", 0, "".join(inline)
            inline = []
            yield from blocks(child)
        elif child_tag and child_tag not in NEVER:
            if child_tag == "br":
                inline.append("\n")
            else:
                inline.append(_inline_text(child))
        inline.append(child.tail or "")
    if "".join(inline).strip():
        yield "text", 0, "".join(inline)


def _inline_text(element: object) -> str:
    parts = [element.text or ""]  # type: ignore[attr-defined]
    for child in element:  # type: ignore[attr-defined]
        tag = _tag(child)
        if tag == "br":
            parts.append("\n")
        elif tag and tag not in NEVER:
            parts.append(_inline_text(child))
        parts.append(child.tail or "")
    return "".join(parts)


def _text(element: object) -> str:
    return " ".join(_inline_text(element).split())


def write_blocks(
    builder: TextBuilder, element: object, top_level: int = 1, known: str | None = None
) -> None:
    """Every block of `element` into `builder`: headings open sections (their level
    shifted so the shallowest is `top_level`); a first heading reading `known` (the
    section already opened for it) is written as text only."""
    for kind, level, text in blocks(element):
        if kind == "heading" and known is not None and " ".join(text.split()) == known:
            builder.block(text)
            known = None
        elif kind == "heading":
            builder.heading(text, max(1, level - 1 + top_level))
        elif kind == "code":
            builder.block(text, clean=False)
        else:
            builder.block(text)
