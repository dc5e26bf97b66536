"""Reading a damaged SQLite file page by page, without SQLite: every table b-tree leaf that
still parses gives its rows, whether or not the pages above it do.

The file format (sqlite.org/fileformat2.html) in the parts salvage needs: the 100-byte
header, b-tree pages (interior and leaf, table and index), table leaf cells with their
overflow chains, records, the freelist, and the write-ahead log's committed frames, which
stand for the pages they replace. A page that does not parse is counted, never guessed at.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

MAGIC = b"SQLite format 3\x00"
LEAF_TABLE, INTERIOR_TABLE, LEAF_INDEX, INTERIOR_INDEX = 13, 5, 10, 2
WAL_MAGIC = (0x377F0682, 0x377F0683)


class PageError(ValueError):
    """A page (or a cell in it) does not parse as what it should be."""


@dataclass
class Cell:
    """One row of a table b-tree leaf: its rowid, its values, the pages it spans."""

    rowid: int
    values: list
    pages: tuple[int, ...]  # the leaf first, then its overflow pages


@dataclass
class PageFile:
    """The pages of a database file (with its WAL's committed frames laid over them)."""

    data: bytes
    page_size: int
    usable: int
    header_ok: bool
    overlay: dict[int, bytes] = field(default_factory=dict)

    @property
    def count(self) -> int:
        return max([len(self.data) // self.page_size, *self.overlay])

    def page(self, number: int) -> bytes:
        if number in self.overlay:
            return self.overlay[number]
        if not 1 <= number <= len(self.data) // self.page_size:
            raise PageError(f"page {number} is outside the file")
        start = (number - 1) * self.page_size
        return self.data[start : start + self.page_size]


def open_pages(path: Path) -> PageFile:
    """The file's pages; a damaged header leaves the page size SQLite's default (4096)."""
    data = Path(path).read_bytes()
    header_ok = data[:16] == MAGIC
    size = 4096
    reserved = 0
    if header_ok:
        raw = struct.unpack(">H", data[16:18])[0]
        size = 65536 if raw == 1 else raw
        reserved = data[20]
        if size < 512 or size & (size - 1):
            header_ok, size, reserved = False, 4096, 0
    pages = PageFile(data, size, size - reserved, header_ok)
    wal = Path(f"{path}-wal")
    if wal.is_file():
        pages.overlay = committed_frames(wal.read_bytes(), size)
    return pages


def committed_frames(wal: bytes, page_size: int) -> dict[int, bytes]:
    """The newest committed version of each page in a WAL (frames whose salts and running
    checksum hold, up to the last commit frame)."""
    if len(wal) < 32:
        return {}
    magic, _, size, _, salt1, salt2 = struct.unpack(">IIIIII", wal[:24])
    if magic not in WAL_MAGIC or size != page_size:
        return {}
    order = "<" if magic == WAL_MAGIC[0] else ">"
    sums = _checksum(wal[:24], (0, 0), order)
    if sums != struct.unpack(">II", wal[24:32]):
        return {}
    done: dict[int, bytes] = {}
    pending: dict[int, bytes] = {}
    at = 32
    while at + 24 + page_size <= len(wal):
        number, commit, s1, s2, c1, c2 = struct.unpack(">IIIIII", wal[at : at + 24])
        if (s1, s2) != (salt1, salt2):
            break
        sums = _checksum(wal[at : at + 8], sums, order)
        sums = _checksum(wal[at + 24 : at + 24 + page_size], sums, order)
        if sums != (c1, c2):
            break
        pending[number] = wal[at + 24 : at + 24 + page_size]
        if commit:
            done.update(pending)
            pending = {}
        at += 24 + page_size
    return done


def _checksum(data: bytes, sums: tuple[int, int], order: str) -> tuple[int, int]:
    s0, s1 = sums
    words = struct.unpack(f"{order}{len(data) // 4}I", data)
    for i in range(0, len(words), 2):
        s0 = (s0 + words[i] + s1) & 0xFFFFFFFF
        s1 = (s1 + words[i + 1] + s0) & 0xFFFFFFFF
    return s0, s1


def varint(buf: bytes, at: int) -> tuple[int, int]:
    """(value, position after it)."""
    value = 0
    for i in range(8):
        if at + i >= len(buf):
            raise PageError("a varint runs past its page")
        byte = buf[at + i]
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value, at + i + 1
    if at + 8 >= len(buf):
        raise PageError("a varint runs past its page")
    return (value << 8) | buf[at + 8], at + 9


def page_kind(pages: PageFile, number: int) -> tuple[int, bytes, int]:
    """(b-tree page type, page bytes, offset of its header) or PageError."""
    data = pages.page(number)
    offset = 100 if number == 1 else 0
    kind = data[offset]
    if kind not in (LEAF_TABLE, INTERIOR_TABLE, LEAF_INDEX, INTERIOR_INDEX):
        raise PageError(f"page {number} is not a b-tree page")
    return kind, data, offset


def children(pages: PageFile, number: int) -> list[int]:
    """The child pages of an interior table page, in key order."""
    kind, data, offset = page_kind(pages, number)
    if kind != INTERIOR_TABLE:
        raise PageError(f"page {number} is not an interior table page")
    count = struct.unpack(">H", data[offset + 3 : offset + 5])[0]
    right = struct.unpack(">I", data[offset + 8 : offset + 12])[0]
    out = []
    for i in range(count):
        pointer = struct.unpack(">H", data[offset + 12 + 2 * i : offset + 14 + 2 * i])[0]
        if not 0 < pointer < len(data) - 4:
            raise PageError(f"page {number}: a cell pointer is out of the page")
        out.append(struct.unpack(">I", data[pointer : pointer + 4])[0])
    return [*out, right]


def leaf_cells(pages: PageFile, number: int) -> Iterator[Cell]:
    """The rows of a table leaf page; a cell that does not parse is left out."""
    kind, data, offset = page_kind(pages, number)
    if kind != LEAF_TABLE:
        raise PageError(f"page {number} is not a table leaf")
    count = struct.unpack(">H", data[offset + 3 : offset + 5])[0]
    if offset + 8 + 2 * count > pages.usable:
        raise PageError(f"page {number}: more cells than fit")
    for i in range(count):
        pointer = struct.unpack(">H", data[offset + 8 + 2 * i : offset + 10 + 2 * i])[0]
        try:
            yield _cell(pages, number, data, pointer)
        except (PageError, struct.error, UnicodeDecodeError, IndexError):
            continue


def _cell(pages: PageFile, number: int, data: bytes, at: int) -> Cell:
    if not 0 < at < pages.usable:
        raise PageError("cell pointer out of the page")
    size, at = varint(data, at)
    rowid, at = varint(data, at)
    if rowid >= 1 << 63:
        rowid -= 1 << 64
    values, spanned = _payload(pages, number, data, at, size, pages.usable - 35)
    return Cell(rowid, values, spanned)


def index_cells(pages: PageFile, number: int) -> Iterator[Cell]:
    """The entries of an index b-tree page (leaf or interior: both hold keys); rowid -1.
    A cell that does not parse is left out."""
    kind, data, offset = page_kind(pages, number)
    if kind not in (LEAF_INDEX, INTERIOR_INDEX):
        raise PageError(f"page {number} is not an index page")
    header = 8 if kind == LEAF_INDEX else 12
    count = struct.unpack(">H", data[offset + 3 : offset + 5])[0]
    if offset + header + 2 * count > pages.usable:
        raise PageError(f"page {number}: more cells than fit")
    most = ((pages.usable - 12) * 64 // 255) - 23
    for i in range(count):
        at = offset + header + 2 * i
        pointer = struct.unpack(">H", data[at : at + 2])[0]
        try:
            if not 0 < pointer < pages.usable:
                raise PageError("cell pointer out of the page")
            start = pointer + (4 if kind == INTERIOR_INDEX else 0)
            size, start = varint(data, start)
            values, spanned = _payload(pages, number, data, start, size, most)
            yield Cell(-1, values, spanned)
        except (PageError, struct.error, UnicodeDecodeError, IndexError):
            continue


def _payload(
    pages: PageFile, number: int, data: bytes, at: int, size: int, most: int
) -> tuple[list, tuple[int, ...]]:
    """A cell's record: its local part, then its overflow chain (fileformat2, 1.6)."""
    usable = pages.usable
    local = size
    if size > most:
        least = ((usable - 12) * 32 // 255) - 23
        local = least + (size - least) % (usable - 4)
        if local > most:
            local = least
    payload = bytearray(data[at : at + local])
    if len(payload) != local or at + local > usable:
        raise PageError("cell runs past its page")
    spanned = [number]
    if local < size:
        following = struct.unpack(">I", data[at + local : at + local + 4])[0]
        while len(payload) < size:
            if following in spanned or following < 1:
                raise PageError("broken overflow chain")
            page = pages.page(following)
            spanned.append(following)
            payload += page[4 : 4 + min(usable - 4, size - len(payload))]
            following = struct.unpack(">I", page[:4])[0]
    return record(bytes(payload)), tuple(spanned)


def record(payload: bytes) -> list:
    """The values of a record (SQLite's serial types)."""
    header, at = varint(payload, 0)
    if not 0 < header <= len(payload):
        raise PageError("bad record header")
    types = []
    while at < header:
        kind, at = varint(payload, at)
        types.append(kind)
    values: list = []
    pos = header
    for kind in types:
        if kind == 0:
            values.append(None)
        elif kind in (8, 9):
            values.append(kind - 8)
        elif 1 <= kind <= 6:
            width = (1, 2, 3, 4, 6, 8)[kind - 1]
            values.append(int.from_bytes(payload[pos : pos + width], "big", signed=True))
            pos += width
        elif kind == 7:
            values.append(struct.unpack(">d", payload[pos : pos + 8])[0])
            pos += 8
        elif kind >= 12:
            width = (kind - 12) // 2
            raw = payload[pos : pos + width]
            values.append(raw if kind % 2 == 0 else raw.decode("utf-8"))
            pos += width
        else:
            raise PageError(f"unknown serial type {kind}")
        if pos > len(payload):
            raise PageError("record runs past its payload")
    return values


def freelist(pages: PageFile) -> set[int]:
    """Pages the file lists as free (they may hold stale rows); what a damaged trunk page
    hides stays unknown."""
    if not pages.header_ok:
        return set()
    header = pages.page(1)
    trunk = struct.unpack(">I", header[32:36])[0]
    free: set[int] = set()
    while trunk and trunk not in free:
        try:
            data = pages.page(trunk)
        except PageError:
            break
        free.add(trunk)
        following, count = struct.unpack(">II", data[:8])
        if count > (pages.usable - 8) // 4:
            break
        free.update(struct.unpack(f">{count}I", data[8 : 8 + 4 * count]))
        trunk = following
    return free
