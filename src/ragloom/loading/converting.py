"""A file of a converted format (PDF, HTML, DOCX, PPTX, EPUB, notebook) into one Document.

The file is read whole within the read policy, its bytes hashed with the format and the
converter's version (the raw hash), and, unless the caller knows that hash already (the
file is unchanged since it was indexed: nothing to convert), handed to the conversion pool
(`ragloom.convert.pool`), whose worker processes bound each file's time and memory.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from ragloom.convert import CONVERTER_VERSION, Converted, format_for, shared_pool
from ragloom.errors import InputError, UnsupportedFormat
from ragloom.loading.opening import NotRegular, OpenFile, ReadPolicy
from ragloom.types import Document

FoundFile = Any  # a `ragloom.loading.files.FoundFile` (that module imports this one)

# (document id, source, raw hash) -> True when that file is indexed already as it is.
Known = Callable[[str, str, str], bool]


@dataclass
class Conversion:
    """One converted file on its way: the outcome of reading it, then its conversion."""

    fmt: str = ""
    raw_hash: str = ""
    size: int = 0
    future: Future[Converted] | None = None
    unchanged: bool = False  # the index holds it as it is: not converted
    skipped: str | None = None  # not a regular file after all
    error: InputError | None = None  # could not be read


def raw_hash(fmt: str, data: bytes) -> str:
    """What stands for a converted file's text, title and metadata: its bytes, its format
    and the converter's version, hashed."""
    digest = hashlib.sha256(f"{fmt}\x00{CONVERTER_VERSION}\x00".encode())
    digest.update(data)
    return digest.hexdigest()


def start_conversion(
    file: FoundFile, policy: ReadPolicy, known: Known | None = None, fmt: str | None = None
) -> Conversion:
    """Read `file` (a `FoundFile`) and submit it for conversion, or find it unchanged."""
    job = Conversion()
    try:
        with OpenFile(file.real_path, file.real_root, file.shown, policy) as opened:
            data = b"".join(opened.blocks())
            opened.check_unchanged()
    except NotRegular as exc:
        job.skipped = str(exc)
        return job
    except InputError as exc:
        job.error = exc
        return job
    job.fmt = fmt or format_for(file.path.name, data[:1024]) or "pdf"
    job.raw_hash, job.size = raw_hash(job.fmt, data), len(data)
    if known is not None and known(file.id, file.source, job.raw_hash):
        job.unchanged = True
        return job
    job.future = shared_pool().submit(job.fmt, data, file.shown, policy.convert_timeout)
    return job


def finish_conversion(job: Conversion, file: FoundFile) -> list[Document]:
    """The file's document (none when it holds no text), or the conversion's typed error."""
    if job.error is not None:
        raise job.error
    assert job.future is not None
    converted = job.future.result()
    if not converted.text.strip() and not converted.title:
        return []
    metadata = {"path": file.id, "type": job.fmt, **converted.metadata}
    return [
        Document(
            id=file.id,
            text=converted.text,
            title=converted.title,
            source=file.source,
            metadata=metadata,
            structure=converted.structure,
            raw_hash=job.raw_hash,
        )
    ]


def converted_file(
    file: FoundFile, policy: ReadPolicy, known: Known | None, job: Conversion | None, fmt: str
) -> tuple[list[Document], str | None, bool]:
    """(documents, skipped, unchanged) of a converted file, its conversion started here
    unless `job` was started ahead."""
    job = job or start_conversion(file, policy, known, fmt)
    if job.skipped:
        return [], job.skipped, False
    if job.unchanged:
        return [], None, True
    return finish_conversion(job, file), None, False


def unsupported(shown: str) -> UnsupportedFormat:
    """The failure of a file whose bytes are not text and not a converted format."""
    return UnsupportedFormat(
        f"{shown}: not a supported format (binary content that is none of the formats"
        " ragloom reads)",
        "ragloom reads text, Markdown, JSONL, CSV/TSV, source code, PDF, HTML, Word (DOCX),"
        " PowerPoint (PPTX), EPUB and notebooks; leave the file out with an exclude glob",
    )
