"""A text file as a stream of parts, so that no file is ever one unbounded document.

A file longer than `part_chars` characters becomes consecutive documents: the first keeps
the file's id, the next are `{id}#2`, `{id}#3`, ... Each is cut at a paragraph break near
the limit (else a line break, a sentence end, a space), carries `part` and `offset` (where
it starts in the file, in characters) in its metadata, and is hashed on its own: appending
to a big file re-indexes only its last parts. Memory is bounded by a part, not by the file.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

DEFAULT_PART_CHARS = 4_000_000


def cut_point(text: str, limit: int) -> int:
    """Where a part of `text` (longer than `limit`) ends: just after the last paragraph
    break in the final fifth before `limit`, else a line break, a sentence end, a space."""
    floor = limit - limit // 5
    for separator in ("\n\n", "\n", ". ", " "):
        at = text.rfind(separator, floor, limit)
        if at >= 0:
            return at + len(separator)
    return limit


def text_parts(pieces: Iterable[str], part_chars: int) -> Iterator[tuple[int, str]]:
    """(offset, text) parts, each at most `part_chars` long, of a text given in pieces
    (at least one part, maybe empty)."""
    buffer = ""
    offset = 0
    for piece in pieces:
        buffer += piece
        while len(buffer) > part_chars:
            cut = cut_point(buffer, part_chars)
            yield offset, buffer[:cut]
            offset += cut
            buffer = buffer[cut:]
    if buffer or offset == 0:
        yield offset, buffer


def part_id(file_id: str, number: int) -> str:
    """The document id of part `number` (from 1) of a file."""
    return file_id if number == 1 else f"{file_id}#{number}"
