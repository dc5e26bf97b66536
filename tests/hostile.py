"""A corpus of hostile files, built by the tests that use it (nothing is checked in).

Each builder writes one kind of trouble into a folder and returns what a run must report for
it: indexed (with a word only that file holds), skipped (with the reason) or failed (with the
error code, and the byte offset and line when the error has a position).
"""

from __future__ import annotations

import json
import os
import socket
import sys
import unicodedata
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Expect:
    """What indexing one hostile file must give."""

    name: str  # the path relative to the folder, as a run shows it (escaped if undecodable)
    outcome: str  # "indexed", "skipped" or "failed"
    detail: str = ""  # a word to search for, the skip reason, or the error code
    offset: int | None = None
    line: int | None = None


def every_category_text() -> str:
    """One character of every Unicode general category UTF-8 can hold (all but Cs)."""
    seen: dict[str, str] = {}
    for code in range(1, sys.maxunicode + 1):  # from 1: a leading NUL reads as binary
        char = chr(code)
        category = unicodedata.category(char)
        if category != "Cs" and category not in seen:
            seen[category] = char
    return "".join(seen.values())


def build(folder: Path, outside: Path) -> list[Expect]:
    """Write the hostile corpus into `folder` (`outside` holds what must never be read)."""
    folder.mkdir(parents=True, exist_ok=True)
    outside.mkdir(parents=True, exist_ok=True)
    secret = outside / "secret.txt"
    secret.write_text("outside secret swordfish\n")
    out: list[Expect] = []

    def text(name: str, content: str | bytes, expect: Expect) -> None:
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
        out.append(expect)

    for i in range(5):
        text(
            f"good/g{i}.txt",
            f"good file {i} about goodword{i}\n",
            Expect(f"good/g{i}.txt", "indexed", f"goodword{i}"),
        )
    bad = b"line one\nline two caf\xe9 latin1\n"
    text(
        "mixed_latin1.txt",
        bad,
        Expect("mixed_latin1.txt", "failed", "invalid_utf8", bad.index(b"\xe9"), 2),
    )
    text(
        "cesu_surrogate.txt",
        b"ok \xed\xa0\x80 surrogate",
        Expect("cesu_surrogate.txt", "failed", "invalid_utf8", 3, 1),
    )
    text(
        "utf16.txt",
        "\ufeffutf sixteen sixteenword\n".encode("utf-16-le"),
        Expect("utf16.txt", "indexed", "sixteenword"),
    )
    text(
        "utf16be.md",
        "\ufeff# T\n\nbig endian bigendianword\n".encode("utf-16-be"),
        Expect("utf16be.md", "indexed", "bigendianword"),
    )
    text(
        "utf32.txt",
        "\ufeffthirty two thirtytwoword\n".encode("utf-32-le"),
        Expect("utf32.txt", "indexed", "thirtytwoword"),
    )
    bad16 = "\ufeffok".encode("utf-16-le") + b"\x00\xdc" + "x".encode("utf-16-le")
    text("utf16_lone.txt", bad16, Expect("utf16_lone.txt", "failed", "invalid_utf8", 6, 1))
    text(
        "nul_early.txt",
        b"\x00\x01binary",
        Expect("nul_early.txt", "failed", "unsupported_format"),
    )
    late = b"a" * 9000 + b" nullateword \x00 tail\n"
    text("nul_late.txt", late, Expect("nul_late.txt", "indexed", "nullateword"))
    text(
        "unicode.txt",
        every_category_text() + " categoryword\n",
        Expect("unicode.txt", "indexed", "categoryword"),
    )
    text("empty.txt", "", Expect("empty.txt", "indexed", ""))
    deep = "[" * 100_000 + "]" * 100_000
    records = [
        json.dumps({"id": "r1", "text": "first record recordone"}),
        json.dumps({"id": "deep", "text": "x", "m": None}).replace("null", deep),
        '{"id": "nan", "text": "t", "m": NaN}',
        '{"id": "big", "text": "t", "m": 1e400}',
        '{"id": "sur", "text": "\\ud800 lone"}',
        json.dumps({"id": "r2", "text": "last record recordtwo"}),
    ]
    text(
        "records.jsonl",
        "\n".join(records) + "\n",
        Expect("records.jsonl", "failed", "bad_record", len(records[0]) + 1, 2),
    )
    name = os.fsdecode(b"bad_name_\xff.txt")
    text(name, "undecodable name file", Expect("bad_name_\\xff.txt", "failed", "bad_input"))
    os.mkfifo(folder / "pipe.txt")
    out.append(Expect("pipe.txt", "skipped", "not a regular file (FIFO)"))
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(folder / "sock.txt"))
    sock.close()
    out.append(Expect("sock.txt", "skipped", "not a regular file (socket)"))
    (folder / "zero.txt").symlink_to("/dev/zero")
    out.append(Expect("zero.txt", "skipped", "symbolic link to a device"))
    (folder / "loop.txt").symlink_to("loop.txt")
    out.append(Expect("loop.txt", "skipped", "symbolic link loop"))
    (folder / "dangling.txt").symlink_to(folder / "nowhere.txt")
    out.append(Expect("dangling.txt", "skipped", "dangling symbolic link"))
    return out
