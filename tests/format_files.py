"""Files of every converted format, made in code (no binary fixture is committed): PDFs
written object by object (and hostile ones: a page loop, a broken xref, a million objects,
a scan, a password), DOCX and PPTX by python-docx and python-pptx, EPUB and notebooks by
hand, zip bombs and entity bombs."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Sequence
from pathlib import Path

Line = tuple[float, str]  # (font size, text): lines are set top to bottom


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def _content(lines: Sequence[Line]) -> bytes:
    out, y = [], 760.0
    for size, text in lines:
        out.append(f"BT /F1 {size:g} Tf 1 0 0 1 56 {y:g} Tm ({_escape(text)}) Tj ET")
        y -= size * 1.5
    return "\n".join(out).encode("latin-1")


def pdf(
    pages: Sequence[Sequence[Line]],
    outline: Sequence[tuple[str, int]] = (),
    *,
    image_only: bool = False,
    loop: bool = False,
    broken_xref: bool = False,
    padding_objects: int = 0,
) -> bytes:
    """A PDF of text pages (Helvetica), with bookmarks (title, 0-based page) if given."""
    objects: dict[int, bytes] = {}
    n_pages = len(pages)
    first_page = 4
    kids = [first_page + 2 * i for i in range(n_pages)]
    if loop:
        kids.append(2)  # the page tree holds itself: a loop
    outline_ref = f" /Outlines {first_page + 2 * n_pages} 0 R" if outline else ""
    objects[1] = f"<< /Type /Catalog /Pages 2 0 R{outline_ref} >>".encode()
    kid_refs = " ".join(f"{k} 0 R" for k in kids)
    objects[2] = f"<< /Type /Pages /Kids [{kid_refs}] /Count {len(kids)} >>".encode()
    objects[3] = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"
    image = first_page + 2 * n_pages + 1 + len(outline)
    for i, lines in enumerate(pages):
        page, stream = first_page + 2 * i, first_page + 2 * i + 1
        resources = f"<< /Font << /F1 3 0 R >> /XObject << /Im1 {image} 0 R >> >>"
        objects[page] = (
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources {resources}"
            f" /Contents {stream} 0 R >>"
        ).encode()
        body = b"q 200 0 0 200 56 500 cm /Im1 Do Q" if image_only else _content(lines)
        objects[stream] = b"<< /Length %d >>\nstream\n" % len(body) + body + b"\nendstream"
    if outline:
        top = first_page + 2 * n_pages
        items = [top + 1 + i for i in range(len(outline))]
        objects[top] = f"<< /Type /Outlines /First {items[0]} 0 R /Last {items[-1]} 0 R >>".encode()
        for i, (title, page_index) in enumerate(outline):
            links = f" /Prev {items[i - 1]} 0 R" if i else ""
            links += f" /Next {items[i + 1]} 0 R" if i + 1 < len(items) else ""
            objects[items[i]] = (
                f"<< /Title ({_escape(title)}) /Parent {top} 0 R{links}"
                f" /Dest [{kids[page_index]} 0 R /XYZ null null null] >>"
            ).encode()
    pixels = b"\x80" * 16
    objects[image] = (
        b"<< /Type /XObject /Subtype /Image /Width 4 /Height 4 /ColorSpace /DeviceGray"
        b" /BitsPerComponent 8 /Length 16 >>\nstream\n" + pixels + b"\nendstream"
    )
    for extra in range(padding_objects):
        objects[image + 1 + extra] = b"null"
    return _assemble(objects, broken_xref)


def _assemble(objects: dict[int, bytes], broken_xref: bool) -> bytes:
    out = bytearray(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    offsets = {}
    for number in sorted(objects):
        offsets[number] = len(out)
        out += b"%d 0 obj\n" % number + objects[number] + b"\nendobj\n"
    xref = len(out)
    size = max(objects) + 1
    out += b"xref\n0 %d\n0000000000 65535 f \n" % size
    for number in range(1, size):
        at = offsets.get(number, 0) + (7 if broken_xref else 0)
        out += b"%010d 00000 n \n" % at
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (size, xref)
    return bytes(out)


def encrypted(data: bytes, password: str = "secret") -> bytes:
    """The same PDF, encrypted (pypdf)."""
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(data)))
    writer.encrypt(password, algorithm="AES-128")
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def report_pdf(pages: int = 3) -> bytes:
    """A report: a running header and footer with page numbers, a word hyphenated at a line
    end, a table, and bookmarks."""
    body = []
    for n in range(1, pages + 1):
        lines: list[Line] = [(9, "Lighthouse Survey 2024 - internal"), (16, f"Chapter {n}")]
        lines += [(11, f"Paragraph on page {n} about keepers and lamps of the coast number {n}.")]
        if n == 1:
            lines += [
                (11, "The survey measured the brightness of every lamp along the north coast and"),
                (11, "found that the oldest lanterns were the most reli-"),
                (11, "able ones in fog, to everyone's surprise."),
                (11, "Station | Lamps | Range"),
                (11, "Greyhaven | 4 | 18 nm"),
            ]
        if n == 2:
            lines += [(11, "Obsidian mirrors were polished by the second keeper every winter.")]
        if n == pages:
            lines += [(11, "The final page holds the conclusion about copper reflectors.")]
        lines += [(9, f"Page {n} of {pages}")]
        body.append(lines)
    marks = [(f"Chapter {n}", n - 1) for n in range(1, pages + 1)]
    return pdf(body, marks)


def long_pdf(pages: int) -> bytes:
    """Many pages of plain text (bounded-memory reading)."""
    lines = "Page {n} tells of harbour number {n} and its pilots."
    return pdf([[(11, lines.format(n=n))] for n in range(1, pages + 1)])


def docx(footnote: str = "Measured at dawn in 1911.") -> bytes:
    """A Word document with headings, a table and a footnote part."""
    import docx as python_docx

    document = python_docx.Document()
    document.core_properties.title = "Keeper's Manual"
    document.core_properties.author = "A. Keeper"
    document.add_heading("Lamps", level=1)
    document.add_paragraph("Trim the wick of the argand lamp before dusk every evening.")
    document.add_heading("Mirrors", level=2)
    document.add_paragraph("Polish the parabolic reflector with rouge and chamois.")
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).text, table.cell(0, 1).text = "Tool", "Use"
    table.cell(1, 0).text, table.cell(1, 1).text = "Chamois", "Polishing brass"
    buffer = io.BytesIO()
    document.save(buffer)
    notes = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        '<w:footnotes xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">'
        '<w:footnote w:id="0"><w:p><w:r><w:t>separator</w:t></w:r></w:p></w:footnote>'
        f'<w:footnote w:id="1"><w:p><w:r><w:t>{footnote}</w:t></w:r></w:p></w:footnote>'
        "</w:footnotes>"
    )
    return _with_part(buffer.getvalue(), "word/footnotes.xml", notes.encode())


def _with_part(archive: bytes, name: str, data: bytes) -> bytes:
    source = zipfile.ZipFile(io.BytesIO(archive))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            if info.filename != name:
                target.writestr(info, source.read(info))
        target.writestr(name, data)
    return out.getvalue()


def pptx() -> bytes:
    """A deck: two titled slides with a bullet each, speaker notes on the second."""
    from pptx import Presentation

    deck = Presentation()
    for title, bullet, notes in (
        ("Fog signals", "Horns sound every thirty seconds in fog.", ""),
        ("Night watch", "Keepers climb the tower at midnight.", "Mention the brass telescope."),
    ):
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = title
        slide.placeholders[1].text = bullet
        if notes:
            slide.notes_slide.notes_text_frame.text = notes
    buffer = io.BytesIO()
    deck.save(buffer)
    return buffer.getvalue()


_CONTAINER = (
    '<?xml version="1.0"?><container version="1.0" '
    'xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles>'
    '<rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
    "</rootfiles></container>"
)


def epub(chapters: Sequence[tuple[str, str]] = (), nav: bool = True) -> bytes:
    """An EPUB 3 book: chapters (title, paragraph) in spine order (listed in reverse in the
    manifest, so spine order is what counts), with a nav table of contents."""
    chapters = chapters or (
        ("The Tower", "The tower stood on basalt above the harbour."),
        ("The Storm", "A storm broke the seaward windows in November."),
    )
    manifest = "".join(
        f'<item id="c{i}" href="text/c{i}.xhtml" media-type="application/xhtml+xml"/>'
        for i in reversed(range(len(chapters)))
    )
    spine = "".join(f'<itemref idref="c{i}"/>' for i in range(len(chapters)))
    nav_item = (
        '<item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>'
        if nav
        else ""
    )
    opf = (
        '<?xml version="1.0" encoding="utf-8"?><package xmlns="http://www.idpf.org/2007/opf" '
        'version="3.0"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/">'
        "<dc:title>Harbour Tales</dc:title><dc:creator>M. Pilot</dc:creator></metadata>"
        f"<manifest>{nav_item}{manifest}</manifest><spine>{spine}</spine></package>"
    )
    links = "".join(
        f'<li><a href="text/c{i}.xhtml">{title}</a></li>' for i, (title, _) in enumerate(chapters)
    )
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as book:
        book.writestr("mimetype", "application/epub+zip", zipfile.ZIP_STORED)
        book.writestr("META-INF/container.xml", _CONTAINER)
        book.writestr("OEBPS/content.opf", opf)
        if nav:
            book.writestr(
                "OEBPS/nav.xhtml",
                f'<html xmlns="http://www.w3.org/1999/xhtml"><body><nav><ol>{links}</ol></nav>'
                "</body></html>",
            )
        for i, (title, text) in enumerate(chapters):
            book.writestr(
                f"OEBPS/text/c{i}.xhtml",
                '<?xml version="1.0" encoding="utf-8"?><!DOCTYPE html>'
                f'<html xmlns="http://www.w3.org/1999/xhtml"><head><title>{title}</title>'
                f"</head><body><h1>{title}</h1><p>{text}</p></body></html>",
            )
    return out.getvalue()


def notebook() -> bytes:
    cells = [
        {"cell_type": "markdown", "source": ["# Tide analysis\n", "\n", "We fit the tides."]},
        {
            "cell_type": "code",
            "source": ["def tide_height(hour):\n", "    return 2.5 * hour\n"],
            "outputs": [
                {
                    "output_type": "stream",
                    "name": "stdout",
                    "text": ["peak tide height at hour 6: 15 metres\n"],
                }
            ],
        },
        {
            "cell_type": "code",
            "source": "print(tide_height(3))",
            "outputs": [
                {"output_type": "execute_result", "data": {"text/plain": "x" * 5000}},
            ],
        },
    ]
    meta = {"kernelspec": {"language": "python", "name": "python3"}}
    return json.dumps({"cells": cells, "metadata": meta, "nbformat": 4}).encode()


ARTICLE = """<!DOCTYPE html><html><head><meta charset="{charset}">
<title>The Keeper's Log | Harbour News</title><style>.x{{color:red}}</style>
<script>var tracking = "scriptword";</script></head><body>
<header><nav><a href="/">Home</a> <a href="/news">Navword news</a></nav></header>
<div class="cookie-banner">We use cookies cookieword to improve your experience.</div>
<main><article><h1>The Keeper's Log</h1>
<p>For forty years the keeper of Greyhaven wrote one line each night in his log, and the
lines tell of fog, of wrecks and of the long nights of {word}.</p>
<h2>The great storm</h2>
<p>In the winter of 1911 the great storm tore the lantern room apart and the keeper held
the light with his own hands until the morning came over the grey water.</p>
<p>The log was found in a tin box under the stairs, dry and complete, in the spring.</p>
</article></main>
<footer>Copyright Harbour News footerword. All rights reserved.</footer></body></html>"""


def html(charset: str = "utf-8", word: str = "winter") -> bytes:
    return ARTICLE.format(charset=charset, word=word).encode(charset)


def zip_bomb(kind: str = "docx", expanded: int = 8 * 1024 * 1024) -> bytes:
    """A DOCX or EPUB whose main part expands over a thousand times (never expanded)."""
    part = "word/document.xml" if kind == "docx" else "OEBPS/text/c0.xhtml"
    base = docx() if kind == "docx" else epub()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        source = zipfile.ZipFile(io.BytesIO(base))
        for info in source.infolist():
            if info.filename != part:
                target.writestr(info, source.read(info))
        with target.open(part, "w") as handle:
            chunk = b" " * (1024 * 1024)
            for _ in range(expanded // len(chunk)):
                handle.write(chunk)
    return out.getvalue()


def entity_bomb_docx() -> bytes:
    """A DOCX whose document part declares nested entities (billion laughs)."""
    levels = ['<!ENTITY lol0 "lol">'] + [
        f'<!ENTITY lol{i} "{("&lol" + str(i - 1) + ";") * 10}">' for i in range(1, 10)
    ]
    body = (
        '<?xml version="1.0"?><!DOCTYPE w:document [' + "".join(levels) + "]>"
        '<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">'
        "<w:body><w:p><w:r><w:t>&lol9;</w:t></w:r></w:p></w:body></w:document>"
    )
    return _with_part(docx(), "word/document.xml", body.encode())


# -- a folder of mixed files (bench/formats_mixed.py, tests/test_formats.py) ----------------
_WORDS = (
    "harbour", "keeper", "lantern", "tide", "pilot", "beacon", "reef", "gale", "channel",
    "buoy", "anchor", "compass", "ledger", "mooring", "quay", "hull", "rigging", "signal",
    "storm", "fog", "cliff", "basalt", "granite", "copper", "brass", "wick",
)  # fmt: skip
# kind -> share of the folder; every kind but the last three is indexed
MIX = {
    "md": 30, "txt": 14, "pdf": 10, "html": 10, "docx": 8, "pptx": 5, "epub": 5,
    "ipynb": 5, "csv": 5, "png": 4, "bad": 4,
}  # fmt: skip
BAD = ("locked.pdf", "scan.pdf", "bomb.docx", "blob.dat")


def _sentence(rng: object, n: int) -> str:
    words = [rng.choice(_WORDS) for _ in range(12)]  # type: ignore[attr-defined]
    return " ".join(words).capitalize() + f" marker{n}."


def mixed_folder(root: Path, count: int, seed: int = 45) -> dict[str, list[str]]:
    """`count` files of every kind under `root` (in subfolders); returns the names expected
    to be indexed, left out and named ("indexed", "left_out", "failed")."""
    import random

    rng = random.Random(seed)
    spread = sorted(((j + 0.5) / share, k) for k, share in MIX.items() for j in range(share))
    kinds = [k for _, k in spread]  # every kind spread evenly over any stretch
    expected: dict[str, list[str]] = {"indexed": [], "left_out": [], "failed": []}
    bad = 0
    for n in range(count):
        kind = kinds[n % len(kinds)]
        folder = root / f"part{n % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        text = " ".join(_sentence(rng, n) for _ in range(rng.randint(3, 12)))
        if kind == "bad":
            name = BAD[bad % len(BAD)]
            name = f"{n}-{name}"
            data = {
                "locked.pdf": lambda: encrypted(report_pdf()),
                "scan.pdf": lambda: pdf([[(11, "")]], image_only=True),
                "bomb.docx": lambda: zip_bomb("docx", 4 * 1024 * 1024),
                "blob.dat": lambda: b"\x00\x01\x02" + bytes(rng.randrange(256) for _ in range(64)),
            }[BAD[bad % len(BAD)]]()
            bad += 1
            (folder / name).write_bytes(data)
            expected["failed"].append(name)
            continue
        name = f"file{n}.{kind}"
        data = _mixed_file(kind, text, n)
        (folder / name).write_bytes(data)
        expected["left_out" if kind == "png" else "indexed"].append(name)
    return expected


def _mixed_file(kind: str, text: str, n: int) -> bytes:
    if kind == "md":
        return f"# Note {n}\n\n{text}\n".encode()
    if kind == "txt":
        return text.encode()
    if kind == "pdf":
        words = text.split()
        pages = [[(11, " ".join(words[i : i + 12]))] for i in range(0, len(words), 12)]
        return pdf(pages or [[(11, text)]])
    if kind == "html":
        return html(word=text)
    if kind == "docx":
        return docx(footnote=text)
    if kind == "pptx":
        return pptx()
    if kind == "epub":
        return epub((("Chapter", text),))
    if kind == "ipynb":
        return json.dumps({"cells": [{"cell_type": "markdown", "source": text}]}).encode()
    if kind == "csv":
        return f"id,text\nrow{n},{text}\n".encode()
    return b"\x89PNG\r\n\x1a\n" + bytes(64)
