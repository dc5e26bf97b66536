"""One indexing run over files: every good file's documents, every bad file reported.

`FileRun.documents()` feeds `Index.add`: a file that cannot be indexed (bad encoding, a bad
JSONL line, over the size limit, refused by the policy, an id that belongs to another file)
becomes a `FileFailure` and the run goes on with the next file, unless `fail_fast`.
Document ids are settled before reading: a file already stored under some id (found by its
real path) keeps that id, so one file is one document however it is reached.
"""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from ragloom.convert import format_for, shared_pool
from ragloom.errors import IdConflict, IndexTimeout, InputError, RagloomError
from ragloom.loading.converting import Conversion, Known, start_conversion
from ragloom.loading.files import FoundFile, discover_files, load_file, shown
from ragloom.loading.jsonl import JsonlFields
from ragloom.loading.opening import DEFAULT_POLICY, ReadPolicy
from ragloom.types import Document

WRITE_CHARS = 4_000_000  # characters of documents one write takes at most (about)
AHEAD_FILES = 4  # converted files read and handed to the worker processes ahead of their turn
AHEAD_BYTES = 64 * 1024 * 1024  # and at most about this many of their bytes waiting


@dataclass
class FileFailure:
    """A file that could not be indexed: where, why, and the typed error."""

    path: str
    code: str
    reason: str
    hint: str | None = None
    offset: int | None = None  # byte offset in the file, when the error has one
    line: int | None = None
    error: RagloomError | None = field(default=None, repr=False, compare=False)

    @classmethod
    def of(cls, path: str, error: RagloomError) -> FileFailure:
        return cls(
            path,
            error.code,
            error.message,
            error.hint,
            getattr(error, "offset", None),
            getattr(error, "line", None),
            error,
        )

    def hint_for(self, audience: str) -> str | None:
        """The hint in the words of "library", "cli" or "http" callers."""
        return self.error.hint_for(audience) if self.error is not None else self.hint

    def to_dict(self, audience: str = "library") -> dict[str, Any]:
        return {
            "path": self.path,
            "code": self.code,
            "reason": self.reason,
            "hint": self.hint_for(audience),
            "offset": self.offset,
            "line": self.line,
        }


class StopSignal:
    """Set from another thread to stop a run at its next file or block (e.g. a time limit)."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self.reason = ""

    def stop(self, reason: str) -> None:
        if not self._event.is_set():
            self.reason = reason
            self._event.set()

    @property
    def stopped(self) -> bool:
        return self._event.is_set()

    def check(self, run: FileRun) -> None:
        if self._event.is_set():
            raise IndexTimeout(
                f"indexing stopped ({self.reason}) while reading {run.current or 'the file list'}"
                f"; {run.done} of {len(run.files)} file(s) done",
                "index the same path again to finish: files already indexed are skipped",
            )


class FileIds(Protocol):
    """What a run needs from the store to keep file ids stable and unique."""

    def by_source(self, sources: Sequence[str]) -> dict[str, list[str]]:
        """Ids of stored file documents (one per file) whose `source` is one of these."""
        ...

    def owners(self, doc_ids: Sequence[str]) -> dict[str, str | None]:
        """The `source` of each of these ids that is stored."""
        ...


def _path_key(file: FoundFile) -> str:
    """The path a file was found at, as a source to look its id up by, or "" when that name
    was a link to another file when found: the document stored under the link's path (say,
    the file the link replaced) is not this file's, and adopting its id would give it another
    file's text (and, once the name is a file again, an id conflict)."""
    try:
        folder = os.path.realpath(os.path.dirname(os.path.abspath(file.path)))
    except OSError:  # a link on the way changed while it was resolved: not a key to trust
        return ""
    if Path(folder) / file.path.name != file.real_path:
        return ""
    return shown(file.path)


def _another_file(owner: str | None, file: FoundFile) -> bool:
    """True when `owner` (a stored source) is an existing file other than `file`."""
    if not owner or not os.path.isabs(owner) or not os.path.isfile(owner):
        return False
    try:
        return not os.path.samefile(owner, file.real_path)
    except OSError:
        return False


class FileRun:
    """Documents of found files, with per-file outcomes (`failed`, `skipped`, `stale`,
    `left_out` by a rule, `unchanged`: converted files the index holds as they are).

    Converted files (PDF, HTML, ...) are read and handed to the conversion workers a few
    files ahead, so conversion runs while earlier documents are chunked and written;
    `known` (set by the writer) tells which of them need no conversion at all.
    """

    def __init__(
        self,
        files: Sequence[FoundFile],
        lenient: bool = False,
        fields: JsonlFields | None = None,
        policy: ReadPolicy = DEFAULT_POLICY,
        fail_fast: bool = False,
        stop: StopSignal | None = None,
        on_file: Callable[[int, int], None] | None = None,
        validate: Callable[[Document], Any] | None = None,
    ) -> None:
        self.lenient = lenient
        self.fields = fields
        self.policy = policy
        self.fail_fast = fail_fast
        self.stop = stop
        self.on_file = on_file
        self.validate = validate
        self.skipped: list[tuple[str, str]] = []
        self.left_out = [(f.shown, f.left_out) for f in files if f.left_out]
        self.unchanged: list[str] = []  # ids of converted files found unchanged by raw hash
        self.known: Known | None = None
        self._ahead: dict[int, Conversion] = {}
        self.failed: list[FileFailure] = []
        self.stale: list[str] = []  # other ids of files indexed now: removed after the run
        self.read = 0
        self.done = 0
        self.current = ""
        self._stale_of: dict[int, list[str]] = {}
        self.files = [f for f in files if not f.left_out]

    # -- ids ------------------------------------------------------------------------------
    def settle_ids(self, ids: FileIds | None) -> None:
        """Give each file the id it is stored under, if any; refuse ids of other files
        (`ids` None: only files of this run are checked against each other)."""
        files = self.files
        plain = [
            i for i, f in enumerate(files) if not f.skip and f.error is None and not f.is_records
        ]
        known: dict[str, list[str]] = {}
        if ids is not None and plain:
            keys = {files[i].source for i in plain} | {_path_key(files[i]) for i in plain}
            known = ids.by_source(sorted(keys - {""}))
        fresh: list[int] = []
        for i in plain:
            file = files[i]
            have = known.get(file.source) or known.get(_path_key(file) or file.source) or []
            if have:
                chosen = file.id if file.id in have else min(have, key=lambda d: (len(d), d))
                files[i] = replace(file, doc_id=chosen)
                self._stale_of[i] = have  # what this run does not write again goes
            else:
                fresh.append(i)
        owners = ids.owners([files[i].id for i in fresh]) if ids is not None and fresh else {}
        taken: dict[str, str] = {}
        for i in plain:
            file = files[i]
            other = taken.setdefault(file.id, file.shown)
            if other != file.shown:
                files[i] = replace(file, error=_conflict(file, other))
            elif i in fresh and _another_file(owners.get(file.id), file):
                files[i] = replace(file, error=_conflict(file, "another file indexed before"))

    # -- the run --------------------------------------------------------------------------
    def documents(self) -> Iterator[Document]:
        """Every good file's documents, in order; outcomes are recorded as it goes."""
        total = len(self.files)
        for number, file in enumerate(self.files):
            self.current = file.shown
            self._check_stop()
            self._start_ahead(number)
            try:
                yield from self._file_documents(number, file)
            except InputError as exc:
                if self.fail_fast:
                    raise
                self.failed.append(FileFailure.of(file.shown, exc))
                warnings.warn(f"failed {exc.message}", stacklevel=2)
            self.done += 1
            if self.on_file:
                self.on_file(self.done, total)
        self.current = ""

    def _start_ahead(self, number: int) -> None:
        """Read and submit the converted files among the next few (bounded in bytes); the
        first time, start the conversion workers if any file may need them."""
        if number == 0 and any(format_for(f.path.name) for f in self.files):
            shared_pool().warm()
        waiting = sum(job.size for job in self._ahead.values() if job.future is not None)
        for at in range(number, min(number + AHEAD_FILES, len(self.files))):
            file = self.files[at]
            if at in self._ahead or file.skip or file.error is not None:
                continue
            fmt = format_for(file.path.name)
            if fmt is None:
                continue
            if waiting >= AHEAD_BYTES and at > number:
                break
            job = start_conversion(file, self.policy, self.known, fmt)
            self._ahead[at] = job
            waiting += job.size

    def _file_documents(self, number: int, file: FoundFile) -> Iterator[Document]:
        job = self._ahead.pop(number, None)
        loaded = load_file(file, self.lenient, self.fields, self.policy, self.known, job)
        if loaded.unchanged:
            self.read += 1
            self.unchanged.append(file.id)
            self._forget_stale(number, {file.id})
            return
        if loaded.skipped:
            self.skipped.append((file.shown, loaded.skipped))
            warnings.warn(f"skipped {file.shown}: {loaded.skipped}", stacklevel=3)
            return
        self.read += 1
        written = set()
        for doc in loaded.documents:
            self._check_stop()
            if self.validate is not None:
                try:
                    self.validate(doc)
                except InputError as exc:
                    if not (file.is_records and self.lenient):
                        raise InputError(f"{file.shown}: {exc.message}", exc.hint) from None
                    warnings.warn(f"skipped a record of {file.shown}: {exc.message}", stacklevel=3)
                    continue
            written.add(doc.id)
            yield doc
        self._forget_stale(number, written)

    def _forget_stale(self, number: int, written: set[str]) -> None:
        """Ids this file was stored under that it no longer has go after the run."""
        self.stale.extend(d for d in self._stale_of.get(number, ()) if d not in written)

    def _check_stop(self) -> None:
        if self.stop is not None:
            self.stop.check(self)


def _conflict(file: FoundFile, holder: str) -> IdConflict:
    return IdConflict(
        f"{file.shown}: its id {file.id!r} already belongs to {holder}",
        "index one of the two folders into another collection (--collection), or delete"
        " the other document first",
    )


def batches(
    documents: Iterable[Document], max_chars: int = WRITE_CHARS, max_documents: int = 512
) -> Iterator[list[Document]]:
    """Documents in lists of at most `max_documents` and about `max_chars` characters, so
    that what one write holds in memory is bounded whatever the files' sizes."""
    batch: list[Document] = []
    size = 0
    for doc in documents:
        batch.append(doc)
        size += len(doc.text) if isinstance(doc.text, str) else 0
        if len(batch) >= max_documents or size >= max_chars:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def index_files(
    paths: Sequence[str | os.PathLike[str]],
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    lenient: bool = False,
    fields: JsonlFields | None = None,
    policy: ReadPolicy | None = None,
    fail_fast: bool = False,
    stop: StopSignal | None = None,
    include_ignored: bool = False,
) -> FileRun:
    """Discover the files under `paths` and prepare a run over them (`settle_ids` next)."""
    policy = policy or DEFAULT_POLICY
    files = [Path(p) for p in paths]
    found = discover_files(files, include, exclude, policy, lenient, include_ignored)
    return FileRun(found, lenient, fields, policy, fail_fast, stop)
