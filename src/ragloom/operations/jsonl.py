"""`export` and `import`: an index as JSON lines (collections with their settings, documents
with their text and metadata, chunk ids and spans, index terms and vectors), streamed, so an
index moves between ragloom versions, stores and machines without re-chunking or
re-embedding.

Lines, in order: a header (`{"ragloom_export": 1, ...}`), per collection a `collection` line
(name and settings) then one `document` line per document, and a trailer (`{"end": ...}`
with the counts) whose absence tells a cut-short file. A chunk's text is
`text[start:end]` of its document; vectors are base64 of little-endian float32.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any

import numpy as np

from ragloom.errors import InputError
from ragloom.operations.backup import store_of
from ragloom.operations.staging import refuse_existing, remove_path, remove_stale, staging_name
from ragloom.store.base import Store
from ragloom.store.migrate import TransferReport
from ragloom.store.records import NewChunk, NewDocument
from ragloom.types import Document
from ragloom.version import __version__

FORMAT = 1
Progress = Callable[[str, int, int], None]  # (what, done, total)


def export_jsonl(
    source: str | Path | Store | Any,
    dest: str | Path | IO[str],
    collections: Iterable[str] | None = None,
    on_progress: Progress | None = None,
) -> TransferReport:
    """Write the index at `source` (every collection, or those named) as JSON lines to
    `dest`: a new file (written under a hidden name, renamed when complete), "-" for
    standard output, or an open text stream. Everything comes from one committed version."""
    with store_of(source) as store, _output(dest) as handle:
        return _write(store, handle, collections, on_progress)


def _write(
    store: Store, handle: IO[str], wanted: Iterable[str] | None, on_progress: Progress | None
) -> TransferReport:
    report = TransferReport()
    with store.snapshot() as snap:  # nested reads below share this one version
        infos = snap.collections()
        names = sorted(infos) if wanted is None else list(wanted)
        missing = [n for n in names if n not in infos]
        if missing:
            raise InputError(f"no collection {', '.join(map(repr, missing))} in {store.location}")
        counts = snap.document_counts()
        total = sum(counts.get(n, {}).get("documents", 0) for n in names)
        header = {"ragloom_export": FORMAT, "ragloom": __version__, "source": store.location}
        header["generation"] = snap.generation
        header["vectors"] = "base64 of little-endian float32"
        _line(handle, header)
        for name in names:
            _line(handle, {"collection": name, "config": infos[name].config})
            for batch in store.export(name):
                for new in batch:
                    _line(handle, _document_line(name, new))
                    report.documents += 1
                    report.chunks += len(new.chunks)
                    report.vectors += sum(c.vector is not None for c in new.chunks)
                if on_progress:
                    on_progress("documents", report.documents, total)
            report.collections.append(name)
    _line(handle, {"end": True, "documents": report.documents, "chunks": report.chunks})
    return report


def _document_line(collection: str, new: NewDocument) -> dict[str, Any]:
    doc = new.document
    chunks = []
    for chunk in new.chunks:
        entry: dict[str, Any] = {"n": chunk.n, "start": chunk.start, "end": chunk.end}
        if chunk.text != doc.text[chunk.start : chunk.end]:
            entry["text"] = chunk.text
        if chunk.metadata:
            entry["metadata"] = chunk.metadata
        entry["terms"] = list(chunk.terms)
        if chunk.vector is not None:
            data = np.asarray(chunk.vector, "<f4").tobytes()
            entry["vector"] = base64.b64encode(data).decode("ascii")
        chunks.append(entry)
    return {
        "document": doc.id,
        "collection": collection,
        "title": doc.title,
        "source": doc.source,
        "metadata": doc.metadata,
        "content_hash": new.content_hash,
        "text": doc.text,
        "chunks": chunks,
    }


def _line(handle: IO[str], record: dict[str, Any]) -> None:
    handle.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")


@contextlib.contextmanager
def _output(dest: str | Path | IO[str]) -> Iterator[IO[str]]:
    if not isinstance(dest, (str, Path)):
        yield dest
        return
    if str(dest) == "-":
        yield sys.stdout
        sys.stdout.flush()
        return
    path = Path(dest).absolute()
    hint = "choose a new file name: an export never writes over a file"
    refuse_existing(path, "export", hint)
    remove_stale(path)
    tmp = staging_name(path)
    try:
        with open(tmp, "w", encoding="utf-8") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        refuse_existing(path, "export", hint)
        os.link(tmp, path)  # never replaces a file made meanwhile
    finally:
        remove_path(tmp)


def import_jsonl(
    source: str | Path | IO[str],
    target: str | Path | Store | Any,
    on_progress: Progress | None = None,
    batch: int = 200,
) -> TransferReport:
    """Add an export's collections to the index at `target` (created when missing); a
    collection that already holds documents there is refused, so two indexes never mix."""
    report = TransferReport()
    with _input(source) as handle:
        _header(handle, source)  # before the target is opened (and maybe created)
        with store_of(target, create=True) as store:
            ended = _import_lines(
                store, _records(handle, str(source)), source, report, on_progress, batch
            )
    if not ended:
        raise InputError(
            f"{source} ends before its last line: it was cut short ({report.documents} "
            "documents were imported)",
            "export again; importing the whole file again replaces what was imported",
        )
    return report


def _header(handle: IO[str], source: Any) -> None:
    first = handle.readline()
    try:
        header = json.loads(first)
    except ValueError:
        header = None
    if not isinstance(header, dict) or "ragloom_export" not in header:
        raise InputError(
            f"{source} is not a ragloom export (its first line is no export header)",
            "give a file that `ragloom export` wrote",
        )
    if header["ragloom_export"] > FORMAT:
        raise InputError(f"{source} was written by a newer ragloom", "upgrade ragloom")


def _import_lines(
    store: Store,
    lines: Iterator[tuple[int, dict[str, Any]]],
    source: Any,  # what the lines are read from (a path or a stream), for messages
    report: TransferReport,
    on_progress: Progress | None,
    batch: int,
) -> bool:
    """Import the collection and document lines; True when the trailer was reached."""
    current, pending, ended = None, list[Any](), False
    for number, record in lines:
        if "collection" in record and "document" not in record:
            _flush(store, current, pending, report, on_progress)
            current, pending = _collection(store, record), []
            report.collections.append(record["collection"])
        elif "document" in record and current is not None:
            pending.append(_new_document(record, source, number))
            if len(pending) >= batch:
                _flush(store, current, pending, report, on_progress)
                pending = []
        elif record.get("end"):
            ended = True
        else:
            raise InputError(f"{source}, line {number}: not a line of a ragloom export")
    _flush(store, current, pending, report, on_progress)
    store.maintain(wait=True)
    return ended


def _collection(store: Store, record: dict[str, Any]) -> Any:
    name, config = record["collection"], record["config"]
    with store.snapshot() as snap:
        busy = name in snap.collections() and snap.collection(name).size()
    if busy:
        raise InputError(
            f"{store.location} already holds documents in collection {name!r}",
            "import into an empty index or collection",
        )
    with store.write() as write:
        made = write.ensure_collection(name, config)
        write.set_config(made, config)
    return made


def _new_document(record: dict[str, Any], source: Any, number: int) -> NewDocument:
    try:
        text = record["text"]
        document = Document(
            record["document"],
            text,
            record.get("title"),
            record.get("source"),
            record.get("metadata") or {},
        )
        chunks = [
            NewChunk(
                c["n"],
                c.get("text", text[c["start"] : c["end"]]),
                c["start"],
                c["end"],
                c.get("metadata") or {},
                c["terms"],
                _vector(c.get("vector")),
            )
            for c in record["chunks"]
        ]
        return NewDocument(document, record["content_hash"], chunks)
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"{source}, line {number}: a malformed document ({exc!r})") from None


def _vector(encoded: str | None) -> np.ndarray | None:
    if encoded is None:
        return None
    return np.frombuffer(base64.b64decode(encoded), "<f4").astype(np.float32)


def _flush(
    store: Store,
    collection: Any,
    pending: list[NewDocument],
    report: TransferReport,
    on_progress: Progress | None,
) -> None:
    if not pending:
        return
    with store.write() as write:
        outcome = write.put(collection, pending)
    report.stored(outcome, pending)
    if on_progress:
        on_progress("documents", report.documents, 0)


def _records(handle: IO[str], where: str) -> Iterator[tuple[int, dict[str, Any]]]:
    for number, line in enumerate(handle, start=2):  # line 1 is the header
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as exc:
            raise InputError(f"{where}, line {number}: not JSON ({exc})") from None
        if not isinstance(record, dict):
            raise InputError(f"{where}, line {number}: not a JSON object")
        yield number, record


@contextlib.contextmanager
def _input(source: str | Path | IO[str]) -> Iterator[IO[str]]:
    if not isinstance(source, (str, Path)):
        yield source
        return
    if str(source) == "-":
        yield io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8")
        return
    path = Path(source)
    if not path.is_file():
        raise InputError(f"no export file at {path}", "give a file that `ragloom export` wrote")
    with open(path, encoding="utf-8") as handle:
        yield handle
