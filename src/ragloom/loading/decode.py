"""Bytes to text: UTF-8, or UTF-16/UTF-32 named by a byte-order mark; precise errors or an
explicit lenient mode. Decoding is incremental so a file is never held twice as bytes."""

from __future__ import annotations

import codecs
from dataclasses import dataclass

from ragloom.errors import DecodeError

SNIFF_BYTES = 8192

# Longest marks first: the UTF-32-LE mark begins with the UTF-16-LE one.
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le", "UTF-32"),
    (codecs.BOM_UTF32_BE, "utf-32-be", "UTF-32"),
    (codecs.BOM_UTF8, "utf-8", "UTF-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le", "UTF-16"),
    (codecs.BOM_UTF16_BE, "utf-16-be", "UTF-16"),
)


@dataclass(frozen=True)
class Encoding:
    """How a file's bytes decode: the codec, the byte-order mark's length, a display name."""

    codec: str = "utf-8"
    bom: int = 0
    name: str = "UTF-8"


UTF8 = Encoding()


def sniff_encoding(head: bytes) -> Encoding:
    """The encoding a leading byte-order mark names; UTF-8 without one."""
    for mark, codec, name in _BOMS:
        if head.startswith(mark):
            return Encoding(codec, len(mark), name)
    return UTF8


def looks_binary(data: bytes, encoding: Encoding = UTF8) -> bool:
    """A NUL byte early in a file without a UTF-16/32 mark means binary (images, archives)."""
    return encoding.codec == "utf-8" and b"\x00" in data[:SNIFF_BYTES]


class StreamDecoder:
    """Decode a file block by block; an invalid sequence raises `DecodeError` with its byte
    offset in the file and its line, unless `lenient` (bad bytes become U+FFFD)."""

    def __init__(self, path: str, encoding: Encoding = UTF8, lenient: bool = False) -> None:
        self.path = path
        self.encoding = encoding
        self._decoder = codecs.getincrementaldecoder(encoding.codec)(
            "replace" if lenient else "strict"
        )
        self._fed = 0  # bytes of the file handed over so far (the mark included)
        self._lines = 0  # newlines decoded so far (counted only when asked)
        self._skip = encoding.bom

    def decode(self, block: bytes, final: bool = False, count_lines: bool = True) -> str:
        """Text of the next block (`final` on the last one: a cut-off sequence is an error)."""
        if self._skip:
            head, block = block[: self._skip], block[self._skip :]
            self._skip -= len(head)
            self._fed += len(head)
        pending = len(self._decoder.getstate()[0])
        try:
            text = self._decoder.decode(block, final)
        except UnicodeDecodeError as exc:
            valid = exc.object[: exc.start].decode(self.encoding.codec, "replace")
            line = self._lines + valid.count("\n") + 1 if count_lines else None
            offset = self._fed - pending + exc.start
            raise DecodeError(self.path, offset, exc.reason, line, self.encoding.name) from None
        self._fed += len(block)
        if count_lines:
            self._lines += text.count("\n")
        return text
