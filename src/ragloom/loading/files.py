"""Find files under paths and read each into Documents."""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ragloom.chunking.code import CODE_SUFFIXES, language_for
from ragloom.errors import InputError, PathNotFound
from ragloom.loading.decode import SNIFF_BYTES, decode_utf8, looks_binary
from ragloom.loading.jsonl import JsonlFields, read_jsonl_file
from ragloom.models import Document

SUPPORTED_SUFFIXES = (".txt", ".md", ".markdown", ".jsonl", *CODE_SUFFIXES)
MARKDOWN_SUFFIXES = (".md", ".markdown")


@dataclass(frozen=True)
class FoundFile:
    """A file to index and the root its document id is relative to.

    `skip` says why a found file must not be read (it is reported, not indexed).
    """

    path: Path
    root: Path
    skip: str | None = None


@dataclass
class LoadedFile:
    """What reading one file gave: its documents, or why it was skipped.

    For a JSONL file `documents` is a one-pass iterator that reads the file as it goes
    (errors in a line surface while iterating); for other files it is a list.
    """

    path: Path
    documents: Iterable[Document] = field(default_factory=list)
    skipped: str | None = None


def _matches(rel: str, patterns: Sequence[str]) -> bool:
    name = rel.rsplit("/", 1)[-1]
    return any(
        fnmatch.fnmatch(rel, p) or fnmatch.fnmatch(name, p) or fnmatch.fnmatch(rel, f"*/{p}")
        for p in patterns
    )


def discover_files(
    paths: Sequence[str | Path],
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
) -> list[FoundFile]:
    """Expand files and directory trees; directories yield supported files matching the globs.

    A file named explicitly is always taken (unless excluded); hidden files and folders inside
    a tree are skipped.
    """
    found: list[FoundFile] = []
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise PathNotFound(f"no such file or folder: {path}", "check the path and try again")
        if path.is_file():
            if not _matches(path.name, exclude):
                found.append(FoundFile(path, path.parent))
            continue
        real_root = path.resolve()
        for dirpath, dirnames, filenames in os.walk(path):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            for name in sorted(filenames):
                if name.startswith("."):
                    continue
                file = Path(dirpath) / name
                rel = file.relative_to(path).as_posix()
                if include:
                    if not _matches(rel, include):
                        continue
                elif file.suffix.lower() not in SUPPORTED_SUFFIXES:
                    continue
                if exclude and _matches(rel, exclude):
                    continue
                outside = file.is_symlink() and not file.resolve().is_relative_to(real_root)
                found.append(
                    FoundFile(file, path, "symlink to outside the folder" if outside else None)
                )
    return found


def document_id_for(file: FoundFile) -> str:
    """Stable id: the path relative to the indexed root, with forward slashes."""
    return file.path.relative_to(file.root).as_posix()


def _markdown_title(text: str) -> str | None:
    for line in text.splitlines()[:50]:
        if line.startswith("# "):
            return line[2:].strip() or None
    return None


def load_file(
    file: FoundFile, lenient: bool = False, fields: JsonlFields | None = None
) -> LoadedFile:
    """Read one file: skips binaries, raises on invalid UTF-8 unless lenient.

    JSONL files are streamed record by record; code files get their language as `type`.
    """
    if file.skip:
        return LoadedFile(file.path, skipped=file.skip)
    suffix = file.path.suffix.lower()
    try:
        if suffix == ".jsonl":
            with file.path.open("rb") as handle:
                data = handle.read(SNIFF_BYTES)
        else:
            data = file.path.read_bytes()
    except OSError as exc:
        raise InputError(
            f"cannot read {file.path}: {exc.strerror or exc}", "check the file's permissions"
        ) from None
    loaded = LoadedFile(file.path)
    if looks_binary(data):
        loaded.skipped = "binary file"
        return loaded
    doc_id = document_id_for(file)
    if suffix == ".jsonl":
        loaded.documents = read_jsonl_file(
            file.path, fields or JsonlFields(), lenient, default_id_prefix=doc_id
        )
        return loaded
    text = decode_utf8(data, str(file.path), lenient=lenient)
    if not text.strip():
        return loaded
    title = _markdown_title(text) if suffix in MARKDOWN_SUFFIXES else None
    kind = language_for(file.path.name) or suffix.lstrip(".") or "text"
    metadata = {"path": doc_id, "type": kind}
    loaded.documents = [
        Document(id=doc_id, text=text, title=title, source=str(file.path), metadata=metadata)
    ]
    return loaded
