"""HTML -> the page's main content (trafilatura), headings as sections, `<title>` as title.

Navigation, headers, footers, cookie banners, scripts and styles are left out. The bytes are
decoded by the charset the page declares (byte-order mark, `<meta charset>`, or the
`http-equiv` content type), else as UTF-8, else by detection.
"""

from __future__ import annotations

import codecs
import re

from ragloom.convert.builder import Converted, TextBuilder
from ragloom.convert.markup import drop_chrome, parse_html, write_blocks

_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([a-zA-Z0-9_.:-]+)""", re.I)
_TITLE = re.compile(r"<title[^>]*>(.*?)</title\s*>", re.I | re.S)
_BOMS = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_LEVELS = {f"h{n}": n for n in range(1, 7)}


def decode_html(data: bytes) -> tuple[str, str]:
    """(text, charset): the byte-order mark's, the declared one, UTF-8, or the detected."""
    for mark, codec in _BOMS:
        if data.startswith(mark):
            return data.decode(codec, "replace"), codec
    declared = _META_CHARSET.search(data[:8192])
    if declared:
        name = declared.group(1).decode("ascii", "ignore").lower()
        try:
            codec = codecs.lookup(name).name
        except LookupError:
            codec = ""
        if codec and not codec.startswith("utf-16"):  # a UTF-16 page needs its mark
            return data.decode(codec, "replace"), codec
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        pass
    from charset_normalizer import from_bytes

    best = from_bytes(data[:1_000_000]).best()
    codec = best.encoding if best is not None else "utf-8"
    return data.decode(codec, "replace"), codec


def _title(text: str) -> str | None:
    found = _TITLE.search(text[:200_000])
    if not found:
        return None
    import html as html_entities

    title = " ".join(html_entities.unescape(re.sub(r"<[^>]+>", " ", found.group(1))).split())
    return title or None


def convert_html(data: bytes, name: str) -> Converted:
    """A web page's main content as text with its headings as sections."""
    text, charset = decode_html(data)
    title = _title(text)
    builder = TextBuilder("page")
    if not _extract_main(text, builder):
        root = parse_html(text)
        drop_chrome(root)
        body = root.find("body")  # type: ignore[attr-defined]
        write_blocks(builder, body if body is not None else root)
    return builder.build(title, {"charset": charset})


def _extract_main(text: str, builder: TextBuilder) -> bool:
    """The main content by trafilatura into `builder`; False when it found none."""
    import trafilatura

    try:
        found = trafilatura.bare_extraction(
            text, include_comments=False, include_tables=True, include_formatting=True
        )
    except Exception:  # a page trafilatura cannot handle still has its text
        return False
    body = getattr(found, "body", None)
    if body is None or not "".join(body.itertext()).strip():
        return False
    for element in body:
        _write_element(builder, element)
    return True


def _write_element(builder: TextBuilder, element: object) -> None:
    tag = element.tag  # type: ignore[attr-defined]
    if tag == "head":
        level = _LEVELS.get(str(element.get("rend", "h2")).lower(), 2)  # type: ignore[attr-defined]
        builder.heading(_flat(element), level)
    elif tag == "list":
        for item in element.iter("item"):  # type: ignore[attr-defined]
            builder.block("- " + _flat(item))
    elif tag == "table":
        for row in element.iter("row"):  # type: ignore[attr-defined]
            cells = [_flat(cell) for cell in row.iter("cell")]
            builder.block(" | ".join(c for c in cells if c))
    elif tag == "code":
        builder.block("".join(element.itertext()), clean=False)  # type: ignore[attr-defined]
    else:
        builder.block(_flat(element, keep_lines=True))


def _flat(element: object, keep_lines: bool = False) -> str:
    text = "".join(element.itertext())  # type: ignore[attr-defined]
    return text if keep_lines else " ".join(text.split())
