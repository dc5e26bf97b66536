"""Bytes to text: UTF-8 only, with a precise error or an explicit lenient mode."""

from __future__ import annotations

from ragloom.errors import DecodeError

SNIFF_BYTES = 8192


def looks_binary(data: bytes) -> bool:
    """A NUL byte early in the file means binary (images, archives, executables)."""
    return b"\x00" in data[:SNIFF_BYTES]


def decode_utf8(data: bytes, path: str, lenient: bool = False) -> str:
    """Decode UTF-8 (a leading BOM is dropped); invalid bytes raise unless `lenient`."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if lenient:
            return data.decode("utf-8", errors="replace")
        raise DecodeError(path, exc.start, exc.reason) from None
