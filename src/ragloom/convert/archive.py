"""Zip-based documents (DOCX, PPTX, EPUB) opened without trusting them.

Before anything is expanded, the zip's directory is checked: how many parts, how large
they say they are in total and how much each one expands (a zip bomb is named, never
expanded). Reads never go past a part's declared size. XML parts that declare entities
(billion laughs, external entities) are refused before any parser sees them.
"""

from __future__ import annotations

import io
import re
import zipfile
from dataclasses import dataclass

from ragloom.errors import ArchiveTooLarge, DocumentError

_ENTITY = re.compile(rb"<!ENTITY", re.IGNORECASE)
_DOCTYPE = re.compile(rb"<!DOCTYPE", re.IGNORECASE)


@dataclass(frozen=True)
class ArchiveLimits:
    """How far a zip-based document may expand: in total, per part, and by ratio."""

    max_total: int = 512 * 1024 * 1024
    max_part: int = 128 * 1024 * 1024
    max_ratio: int = 200  # a part's expanded size over its compressed size
    max_parts: int = 20_000


DEFAULT_LIMITS = ArchiveLimits()


class SafeZip:
    """A zip archive whose directory has been checked against `ArchiveLimits`."""

    def __init__(self, data: bytes, name: str, limits: ArchiveLimits = DEFAULT_LIMITS) -> None:
        self.name = name
        try:
            self.zip = zipfile.ZipFile(io.BytesIO(data))
        except (zipfile.BadZipFile, OSError, ValueError) as exc:
            raise DocumentError(f"{name} is not a readable zip archive ({exc})") from None
        self._check(limits)
        self.names = {info.filename for info in self.zip.infolist()}

    def _check(self, limits: ArchiveLimits) -> None:
        infos = self.zip.infolist()
        if len(infos) > limits.max_parts:
            raise ArchiveTooLarge(
                f"{self.name}: archive holds {len(infos):,} parts, over the limit of"
                f" {limits.max_parts:,}; not expanded"
            )
        total = 0
        for info in infos:
            total += info.file_size
            ratio = info.file_size / max(info.compress_size, 1)
            if info.file_size > limits.max_part or (
                info.file_size > 1024 * 1024 and ratio > limits.max_ratio
            ):
                raise ArchiveTooLarge(
                    f"{self.name}: archive expands past the limit (part {info.filename!r}:"
                    f" {info.file_size:,} bytes from {info.compress_size:,}); not expanded"
                )
        if total > limits.max_total:
            raise ArchiveTooLarge(
                f"{self.name}: archive expands past the limit ({total:,} bytes in all, over"
                f" {limits.max_total:,}); not expanded"
            )

    def read(self, part: str) -> bytes:
        """A part's bytes (at most its declared size); `DocumentError` when it is missing
        or damaged."""
        try:
            with self.zip.open(part) as handle:
                return handle.read()
        except KeyError:
            raise DocumentError(f"{self.name}: part {part!r} is missing") from None
        except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
            raise DocumentError(f"{self.name}: part {part!r} is damaged ({exc})") from None

    def read_xml(self, part: str, allow_doctype: bool = False) -> bytes:
        """An XML part's bytes, refused when it declares entities (or, unless allowed, a
        document type): entity expansion is never left to a parser."""
        data = self.read(part)
        return checked_xml(data, f"{self.name}: part {part!r}", allow_doctype)


def checked_xml(data: bytes, what: str, allow_doctype: bool = False) -> bytes:
    """`data` unchanged, or `DocumentError` when it declares an entity (or a DOCTYPE)."""
    head = data[:65536]
    if _ENTITY.search(data) or (not allow_doctype and _DOCTYPE.search(head)):
        raise DocumentError(f"{what} declares XML entities; refused (entity expansion)")
    return data
