"""Which files are converted, and by what: suffix -> format -> converter function.

Converters are imported on first use, so importing ragloom never loads PDFium or lxml.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module

from ragloom.convert.builder import Converted

# Bumped when a converter's output changes for the same bytes: part of every converted
# file's raw hash, so such files are converted again when indexed again.
CONVERTER_VERSION = 1

FORMATS: dict[str, tuple[str, ...]] = {
    "pdf": (".pdf",),
    "html": (".html", ".htm", ".xhtml"),
    "docx": (".docx",),
    "pptx": (".pptx",),
    "epub": (".epub",),
    "notebook": (".ipynb",),
}
CONVERTED_SUFFIXES = tuple(s for suffixes in FORMATS.values() for s in suffixes)
_BY_SUFFIX = {s: name for name, suffixes in FORMATS.items() for s in suffixes}
_CONVERTERS = {
    "pdf": ("ragloom.convert.pdf", "convert_pdf"),
    "html": ("ragloom.convert.html", "convert_html"),
    "docx": ("ragloom.convert.docx", "convert_docx"),
    "pptx": ("ragloom.convert.pptx", "convert_pptx"),
    "epub": ("ragloom.convert.epub", "convert_epub"),
    "notebook": ("ragloom.convert.notebook", "convert_notebook"),
}


def format_for(name: str, head: bytes = b"") -> str | None:
    """The format of a file by its name's suffix, or by its first bytes (a PDF without its
    suffix); None for everything else (text, or not supported)."""
    dot = name.rfind(".")
    found = _BY_SUFFIX.get(name[dot:].lower()) if dot >= 0 else None
    if found is None and head.lstrip()[:5] == b"%PDF-":
        return "pdf"
    return found


def converter(fmt: str) -> Callable[[bytes, str], Converted]:
    """The function converting bytes of format `fmt` (a name shown in messages beside)."""
    module, function = _CONVERTERS[fmt]
    return getattr(import_module(module), function)


def convert_bytes(fmt: str, data: bytes, name: str) -> Converted:
    """Convert in this process (the loader converts in worker processes: `pool`)."""
    return converter(fmt)(data, name)
