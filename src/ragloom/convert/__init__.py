"""Converters: one file's bytes in, its text plus structure out (pages, slides, cells and
sections as offsets into the text, a title, a little metadata), and nothing else.

`format_for` says which files are converted; `convert_bytes` converts in this process;
`shared_pool()` converts in worker processes with a time and memory limit per file, which
is how the loader calls them. One module per format: `pdf`, `html`, `docx`, `pptx`,
`epub`, `notebook`.
"""

from ragloom.convert.builder import Converted, TextBuilder
from ragloom.convert.formats import (
    CONVERTED_SUFFIXES,
    CONVERTER_VERSION,
    FORMATS,
    convert_bytes,
    format_for,
)
from ragloom.convert.pool import ConversionPool, shared_pool

__all__ = [
    "CONVERTED_SUFFIXES",
    "CONVERTER_VERSION",
    "FORMATS",
    "ConversionPool",
    "Converted",
    "TextBuilder",
    "convert_bytes",
    "format_for",
    "shared_pool",
]
