"""EPUB -> chapters in spine order, chapter titles (from the table of contents) as sections.

Read with the standard library's zipfile through `ragloom.convert.archive` (a bomb is
named, never expanded) and defusedxml for the package files; chapters are XHTML, read with
lxml's HTML parser after the entity check.
"""

from __future__ import annotations

import posixpath
from urllib.parse import unquote

from ragloom.convert.archive import SafeZip, checked_xml
from ragloom.convert.builder import Converted, TextBuilder
from ragloom.convert.markup import blocks, parse_html, write_blocks
from ragloom.errors import DocumentError

_OPF = "{http://www.idpf.org/2007/opf}"
_DC = "{http://purl.org/dc/elements/1.1/}"
_NCX = "{http://www.daisy.org/z3986/2005/ncx/}"
_CONTAINER = "{urn:oasis:names:tc:opendocument:xmlns:container}"


def _xml(archive: SafeZip, part: str) -> object:
    import defusedxml.ElementTree as safe_tree

    data = archive.read_xml(part, allow_doctype=True)
    try:
        return safe_tree.fromstring(data, forbid_dtd=False, forbid_entities=True)
    except Exception as exc:
        raise DocumentError(f"{archive.name}: part {part!r} is not valid XML ({exc})") from None


def _resolve(base: str, href: str) -> str:
    return posixpath.normpath(posixpath.join(posixpath.dirname(base), unquote(href.split("#")[0])))


def _package(archive: SafeZip) -> str:
    container = _xml(archive, "META-INF/container.xml")
    for rootfile in container.iter(f"{_CONTAINER}rootfile"):  # type: ignore[attr-defined]
        path = rootfile.get("full-path")
        if path:
            return unquote(path)
    raise DocumentError(f"{archive.name}: META-INF/container.xml names no package file")


def _toc_titles(archive: SafeZip, opf_path: str, manifest: dict, toc_id: str | None) -> dict:
    """Chapter file -> its title in the table of contents (EPUB 3 nav, else EPUB 2 NCX)."""
    titles: dict[str, str] = {}
    nav = next((i for i in manifest.values() if "nav" in i["properties"].split()), None)
    if nav is not None and nav["path"] in archive.names:
        page = archive.read_xml(nav["path"], allow_doctype=True)
        root = parse_html(page.decode("utf-8", "replace"))
        for link in root.iter("a"):  # type: ignore[attr-defined]
            href, text = link.get("href"), " ".join(link.text_content().split())
            if href and text:
                titles.setdefault(_resolve(nav["path"], href), text)
        if titles:
            return titles
    ncx = manifest.get(toc_id or "")
    if ncx is not None and ncx["path"] in archive.names:
        root = _xml(archive, ncx["path"])
        for point in root.iter(f"{_NCX}navPoint"):  # type: ignore[attr-defined]
            label = point.find(f"{_NCX}navLabel/{_NCX}text")
            content = point.find(f"{_NCX}content")
            if label is not None and content is not None and (label.text or "").strip():
                target = _resolve(ncx["path"], content.get("src", ""))
                titles.setdefault(target, " ".join(label.text.split()))
    return titles


def convert_epub(data: bytes, name: str) -> Converted:
    """A book's chapters in reading order, each chapter's title opening its section."""
    archive = SafeZip(data, name)
    opf_path = _package(archive)
    opf = _xml(archive, opf_path)
    manifest = {}
    for item in opf.iter(f"{_OPF}item"):  # type: ignore[attr-defined]
        manifest[item.get("id", "")] = {
            "path": _resolve(opf_path, item.get("href", "")),
            "type": item.get("media-type", ""),
            "properties": item.get("properties", ""),
        }
    spine = opf.find(f"{_OPF}spine")  # type: ignore[attr-defined]
    if spine is None:
        raise DocumentError(f"{name}: the EPUB package has no spine (no reading order)")
    titles = _toc_titles(archive, opf_path, manifest, spine.get("toc"))
    builder = TextBuilder("page")
    for ref in spine.iter(f"{_OPF}itemref"):
        item = manifest.get(ref.get("idref", ""))
        if item is None or item["path"] not in archive.names or "html" not in item["type"]:
            continue
        _chapter(archive, item["path"], titles.get(item["path"]), builder)
    metadata = {}
    creator = opf.find(f".//{_DC}creator")  # type: ignore[attr-defined]
    if creator is not None and (creator.text or "").strip():
        metadata["author"] = " ".join(creator.text.split())
    title = opf.find(f".//{_DC}title")  # type: ignore[attr-defined]
    return builder.build(title.text if title is not None else None, metadata)


def _chapter(archive: SafeZip, path: str, title: str | None, builder: TextBuilder) -> None:
    page = checked_xml(archive.read(path), f"{archive.name}: part {path!r}", allow_doctype=True)
    root = parse_html(page.decode("utf-8", "replace"))
    body = root.find("body")  # type: ignore[attr-defined]
    body = body if body is not None else root
    if title is None:  # no entry in the table of contents: its first heading, if any
        title = next((text for kind, _, text in blocks(body) if kind == "heading"), None)
    if title:
        builder.section(title, 1)
    write_blocks(builder, body, top_level=2, known=title)
