"""PDF -> text page by page (pypdfium2, PDFium's own text layer), in bounded memory.

Each page is opened, its lines read (with the font size of each), and closed before the
next, so a 1,000-page PDF never has more than one page loaded. Then: running headers and
footers (the same line at the top or bottom of many pages, page numbers aside) and bare page
numbers are dropped, words split at line ends are rejoined, wrapped lines become paragraphs
while short lines (table rows, lists) stay lines, and sections come from the outline
(bookmarks) or, without one, from lines set larger than the body text.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from ragloom.convert.builder import Converted, TextBuilder
from ragloom.errors import DocumentError, NoTextLayer, PasswordProtected

_HYPHENS = ("-", "\u00ad", "\ufffe", "\x02")
_DIGITS = re.compile(r"\d+")
_PAGE_NUMBER = re.compile(
    r"^(?:page\s+)?(?:\d{1,4}|[ivxlcdm]{1,7})(?:\s*(?:/|of)\s*\d{1,4})?$", re.IGNORECASE
)
_SENTENCE_END = re.compile(r"[.!?:;\"'\u201d)\]]$")
_ALEF_LAM = re.compile("[\u0622\u0623\u0625\u0627]\u0644")
_LINE = re.compile(r"[^\r\n]+")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\ufffe\uffff]")
MAX_HEADING_CHARS = 150
MIN_EDGED_LINES = 3  # a page needs this many lines before its first or last can be chrome


@dataclass
class Line:
    text: str
    size: float = 0.0  # height of its first character as set, in points (0: unknown)


def _page_lines(page: object) -> list[Line]:
    """The text lines of one page with their font sizes; the page's text page is closed."""
    textpage = page.get_textpage()  # type: ignore[attr-defined]
    try:
        text = textpage.get_text_range()
        sized = textpage.count_chars() == len(text)
        if sized and _ALEF_LAM.search(text):
            text = _lam_alef(textpage, text)
        lines: list[Line] = []
        for match in _LINE.finditer(text):
            raw = match.group()
            stripped = _CONTROL.sub("", raw).strip()
            if not stripped:
                continue
            size = 0.0
            if sized:  # the loose box's height: the font size as set (matrix included)
                first = match.start() + len(raw) - len(raw.lstrip())
                _, bottom, _, top = textpage.get_charbox(first, loose=True)
                size = round(max(top - bottom, 0.0) * 2) / 2
            lines.append(Line(stripped, size))
        return lines
    finally:
        textpage.close()


def _lam_alef(textpage: object, text: str) -> str:
    """Arabic-script text with its lam-alef ligatures in reading order: PDFium gives the two
    letters of one ligature glyph (both at the glyph's place) as alef then lam."""
    chars = list(text)
    for found in _ALEF_LAM.finditer(text):
        at = found.start()
        if textpage.get_charbox(at) == textpage.get_charbox(at + 1):  # type: ignore[attr-defined]
            chars[at], chars[at + 1] = chars[at + 1], chars[at]
    return "".join(chars)


def _key(text: str) -> str:
    return _DIGITS.sub("#", " ".join(text.lower().split()))


def _running_lines(pages: list[list[Line]]) -> set[tuple[int, str]]:
    """(edge, key) of lines that run along the top (0) or bottom (1) of many pages."""
    if len(pages) < 3:
        return set()
    counts: Counter[tuple[int, str]] = Counter()
    for lines in pages:
        if len(lines) < MIN_EDGED_LINES:
            continue
        seen = set()
        for edge, near in ((0, lines[:2]), (1, lines[-2:])):
            for line in near:
                seen.add((edge, _key(line.text)))
        counts.update(seen)
    least = max(3, len(pages) // 4)
    return {key for key, count in counts.items() if count >= least and len(key[1]) < 200}


def _strip_edges(
    lines: list[Line], running: set[tuple[int, str]], many: bool, keep: set[str]
) -> list[Line]:
    """A page's lines without running headers and footers and bare page numbers; a line in
    `keep` (a bookmark's title, or set as a heading) is never dropped."""

    def dropped(edge: int, line: Line) -> bool:
        if line.text.lower() in keep:
            return False
        return (edge, _key(line.text)) in running or (many and bool(_PAGE_NUMBER.match(line.text)))

    if len(lines) < MIN_EDGED_LINES:  # a page this short has no header apart from its text
        return lines
    start, end = 0, len(lines)
    while start < min(end, 2) and dropped(0, lines[start]):
        start += 1
    while end > max(start, len(lines) - 2) and dropped(1, lines[end - 1]):
        end -= 1
    return lines[start:end]


def _joined(lines: list[str]) -> list[str]:
    """Lines as paragraphs: wrapped lines joined (hyphenated words rejoined), short lines
    kept as lines, a short line ending a sentence closes its paragraph."""
    if not lines:
        return []
    widths = sorted(len(line) for line in lines)
    wide = widths[int(len(widths) * 0.9)] if widths else 0
    paragraphs: list[str] = []
    current = ""
    for line in lines:
        if not current:
            current = line
        elif current.endswith(_HYPHENS) and line[:1].islower() and current[-2:-1].isalpha():
            current = current.rstrip("".join(_HYPHENS)) + line
        elif current.endswith("\n"):
            current += line
        else:
            current += " " + line
        long_line = len(line) >= 0.6 * wide and wide >= 30
        if not long_line and _SENTENCE_END.search(line):
            paragraphs.append(current)
            current = ""
        elif not long_line:
            current += "\n"
    if current.strip():
        paragraphs.append(current)
    return [p.strip() for p in paragraphs if p.strip()]


def _heading_levels(pages: list[list[Line]]) -> dict[float, int]:
    """Font sizes set larger than the body text, biggest first, as heading levels 1-3."""
    weights: Counter[float] = Counter()
    for lines in pages:
        for line in lines:
            if line.size > 0:
                weights[round(line.size, 1)] += len(line.text)
    if not weights:
        return {}
    body = weights.most_common(1)[0][0]
    bigger = sorted((s for s in weights if s >= body * 1.1), reverse=True)
    return {size: min(level, 3) for level, size in enumerate(bigger, start=1)}


def _is_heading(line: Line, levels: dict[float, int]) -> int:
    level = levels.get(round(line.size, 1), 0)
    text = line.text
    if not level or len(text) > MAX_HEADING_CHARS or not any(c.isalpha() for c in text):
        return 0
    return level


def _outline(pdf: object) -> dict[int, list[tuple[int, str]]]:
    """Bookmarks by the page they point to: (level from 1, title)."""
    found: dict[int, list[tuple[int, str]]] = {}
    try:
        for mark in pdf.get_toc(max_depth=6):  # type: ignore[attr-defined]
            dest = mark.get_dest()
            index = dest.get_index() if dest is not None else None
            title = " ".join((mark.get_title() or "").split())
            if index is not None and title:
                found.setdefault(index, []).append((mark.level + 1, title))
    except Exception:  # a damaged outline is no reason to lose the text
        return {}
    return found


def _open(data: bytes, name: str) -> object:
    import pypdfium2 as pdfium

    try:
        return pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        if "password" in str(exc).lower():
            raise PasswordProtected(
                f"{name} is a password-protected PDF; not read",
                "save an unprotected copy to index it",
            ) from None
        raise DocumentError(f"{name} is not a readable PDF ({exc})") from None


def _read_pages(pdf: object) -> list[list[Line]]:
    import pypdfium2 as pdfium

    pages: list[list[Line]] = []
    for index in range(len(pdf)):  # type: ignore[arg-type]
        try:
            page = pdf[index]  # type: ignore[index]
        except pdfium.PdfiumError:
            pages.append([])  # a damaged page: the others are still read
            continue
        try:
            pages.append(_page_lines(page))
        finally:
            page.close()
    return pages


def convert_pdf(data: bytes, name: str) -> Converted:
    """A PDF's text, one unit per page, sections from its outline or its larger type."""
    pdf = _open(data, name)
    try:
        count = len(pdf)  # type: ignore[arg-type]
        if count == 0:
            raise DocumentError(f"{name} is a PDF without pages")
        pages = _read_pages(pdf)
        outline = _outline(pdf)
        metadata = _metadata(pdf, count)
    finally:
        pdf.close()  # type: ignore[attr-defined]
    if not any(pages):
        raise NoTextLayer(
            f"{name} has no text layer (its {count} page(s) are images: a scan?); not read",
            "run OCR on it first (e.g. ocrmypdf) to add a text layer",
        )
    running = _running_lines(pages)
    levels = _heading_levels(pages)
    keep = {title.lower() for marks in outline.values() for _, title in marks}
    keep |= {line.text.lower() for lines in pages for line in lines if _is_heading(line, levels)}
    if outline:
        levels = {}  # the outline gives the sections
    builder = TextBuilder("page")
    for index, lines in enumerate(pages):
        builder.start_unit()
        start = builder.offset
        kept = _strip_edges(lines, running, count > 1, keep)
        _add_page(builder, kept, levels, keep if outline else set())
        for level, title in outline.get(index, ()):
            builder.section_at(_find(builder, start, title), title, level)
    named = metadata.pop("title", None)
    return builder.build(named if isinstance(named, str) else None, metadata)


def _add_page(
    builder: TextBuilder, lines: list[Line], levels: dict[float, int], titles: set[str]
) -> None:
    """One page's lines as blocks: headings (by size) open sections, a bookmark's title
    line stands as its own block, the rest joined into paragraphs."""
    run: list[str] = []
    for line in lines:
        level = _is_heading(line, levels)
        if level or line.text.lower() in titles:
            for paragraph in _joined(run):
                builder.block(paragraph)
            run = []
            if level:
                builder.heading(line.text, level)
            else:
                builder.block(line.text)
        else:
            run.append(line.text)
    for paragraph in _joined(run):
        builder.block(paragraph)


def _find(builder: TextBuilder, start: int, title: str) -> int:
    """Where a bookmark's title is written on its page, else the page's start."""
    text = builder.text_since(start)
    at = text.lower().find(title.lower())
    return start + at if at >= 0 else start


def _metadata(pdf: object, count: int) -> dict[str, object]:
    out: dict[str, object] = {"pages": count}
    try:
        info = pdf.get_metadata_dict(skip_empty=True)  # type: ignore[attr-defined]
    except Exception:
        info = {}
    for key, field in (("Title", "title"), ("Author", "author")):
        value = " ".join(str(info.get(key, "")).split())
        if value:
            out[field] = value[:500]
    return out
