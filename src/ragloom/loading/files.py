"""Find files under paths and read each into Documents.

Discovery looks at each entry without opening it: only regular files (or links to regular
files inside the folder) are taken; FIFOs, sockets and devices, link loops, dangling links
and links leading outside are skipped with their reason. Reading goes through
`ragloom.loading.opening`, which opens what discovery checked and nothing else.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from itertools import chain
from pathlib import Path

from ragloom.chunking.code import language_for
from ragloom.convert import format_for
from ragloom.errors import InputError, PathNotFound, RagloomError
from ragloom.loading.converting import Conversion, Known, converted_file, unsupported
from ragloom.loading.decode import StreamDecoder, looks_binary, sniff_encoding
from ragloom.loading.ignore import FolderRules
from ragloom.loading.jsonl import JsonlFields, file_records
from ragloom.loading.kinds import TABULAR_SUFFIXES
from ragloom.loading.opening import DEFAULT_POLICY, NotRegular, OpenFile, ReadPolicy, kind_of
from ragloom.loading.parts import part_id, text_parts
from ragloom.loading.rules import matches, rule_for
from ragloom.loading.tabular import table_documents
from ragloom.types import Document

MARKDOWN_SUFFIXES = (".md", ".markdown")
CHANGING = "changed while it was being examined"


def shown(path: str | Path) -> str:
    """A path as text that can be printed and stored: undecodable bytes as `\\xff` escapes."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


@dataclass(frozen=True)
class FoundFile:
    """A file to index: where it was found, its real path and the root it is opened from.

    `doc_id` is the id of its document (the path relative to `root` unless given), `name`
    how messages show it, `skip` why it must not be read (reported, not indexed),
    `error` why it cannot be indexed (a failure) and `left_out` the rule that left it out
    (an include or exclude glob, or a default rule: counted, never read).
    """

    path: Path
    root: Path
    skip: str | None = None
    real: Path | None = None
    doc_id: str | None = None
    name: str | None = None
    error: RagloomError | None = None
    left_out: str | None = None

    @property
    def real_path(self) -> Path:
        return self.real or Path(os.path.realpath(self.path))

    @property
    def real_root(self) -> Path:
        return Path(os.path.realpath(self.root))

    @property
    def id(self) -> str:
        return self.doc_id or document_id_for(self)

    @property
    def shown(self) -> str:
        return self.name or shown(self.path)

    @property
    def source(self) -> str:
        """What the document's `source` holds: the file's real path."""
        return shown(self.real_path)

    @property
    def is_jsonl(self) -> bool:
        return self.path.suffix.lower() == ".jsonl"

    @property
    def is_records(self) -> bool:
        """A file of records (JSONL, CSV, TSV): each record a document with its own id."""
        return self.is_jsonl or self.path.suffix.lower() in TABULAR_SUFFIXES


@dataclass
class LoadedFile:
    """What reading one file gave: its documents, or why it was skipped.

    For a JSONL file, and a text file in several parts, `documents` is a one-pass iterator
    that reads the file as it goes (errors surface while iterating); otherwise a list.
    """

    path: Path
    documents: Iterable[Document] = field(default_factory=list)
    skipped: str | None = None
    unchanged: bool = False  # a converted file the index holds as it is: not converted


def _root_of(real: Path, roots: Sequence[Path]) -> Path | None:
    """The first configured root that holds `real`."""
    return next((r for r in roots if real == r or real.is_relative_to(r)), None)


class _Discovery:
    """One discovery call: the policy, the globs and what was found so far."""

    def __init__(
        self,
        include: Sequence[str],
        exclude: Sequence[str],
        policy: ReadPolicy,
        lenient: bool,
        include_ignored: bool = False,
    ) -> None:
        self.include = include
        self.exclude = exclude
        self.include_ignored = include_ignored
        self.roots = policy.roots
        self.lenient = lenient
        self.found: list[FoundFile] = []
        self._seen: dict[Path, int] = {}  # real path -> its entry: one file, one document

    def label(self, path: Path) -> str:
        """How a path is shown: relative to its root under the server's roots, else as found."""
        root = _root_of(path, self.roots) if self.roots else None
        return shown(path.relative_to(root).as_posix() if root else path)

    def add_under_root(self, path: Path, real: Path) -> None:
        """A file under the server's roots: its id and shown name are root-relative."""
        root = _root_of(real, self.roots)
        if root is None:
            self.skip(path, path.parent, "symbolic link to outside the allowed folders")
            return
        doc_id = shown(real.relative_to(root).as_posix())
        self.add(path, root, real, doc_id)

    def add(self, path: Path, root: Path, real: Path, doc_id: str, name: str = "") -> None:
        label = name or self.label(path)
        error = None
        if shown(path) != str(path) and not self.lenient:
            error = InputError(
                f"{label}: the file name is not valid UTF-8",
                "rename the file, or index with lenient mode to keep the escaped name as its id",
            )
        entry = FoundFile(path, root, None, real, doc_id, label, error)
        if real not in self._seen:
            self._seen[real] = len(self.found)
            self.found.append(entry)
            return
        # One file, two names: keep the one that is not a link, skip the other.
        at = self._seen[real]
        kept = self.found[at]
        if os.path.islink(kept.path) and not os.path.islink(path):
            self.found[at], entry = entry, kept
        self.found.append(
            replace(entry, skip=f"the same file as {self.found[at].shown}", error=None)
        )

    def skip(self, path: Path, root: Path, reason: str) -> None:
        self.found.append(FoundFile(path, root, reason, name=self.label(path)))

    def explicit(self, raw: str | Path) -> None:
        path = Path(raw)
        try:
            info = os.stat(path)
        except OSError as exc:
            if os.path.lexists(path):  # a link that leads nowhere or to itself
                self.skip(path, path.parent, _broken_link(exc))
                return
            raise PathNotFound(
                f"no such file or folder: {self.label(path)}", "check the path and try again"
            ) from None
        try:
            real = Path(os.path.realpath(path))
        except OSError:  # a link in the path changed while it was being resolved
            self.skip(path, path.parent, CHANGING)
            return
        if self.roots and _root_of(real, self.roots) is None:
            self.skip(path, path.parent, "outside the allowed folders")
            return
        if stat.S_ISDIR(info.st_mode):
            self.walk(path, real)
        elif not stat.S_ISREG(info.st_mode):
            self.skip(path, path.parent, f"not a regular file ({kind_of(info.st_mode)})")
        elif matches(path.name, self.exclude):
            self.leave_out(path, path.parent, "matched by --exclude")
        elif self.roots:
            self.add_under_root(path, real)
        else:  # a file named on its own: its real path is its id (no two files share it)
            self.add(path, real.parent, real, shown(real))

    def walk(self, top: Path, real_top: Path) -> None:
        """Every name under `top` is taken, or left out by a rule and counted (never
        dropped unseen): hidden names, scratch files and what a `.gitignore` ignores (unless
        `include_ignored`), the globs, then the default rules (`loading.kinds`)."""
        rules = FolderRules(top, gitignore=not self.include_ignored)

        def unlisted(exc: OSError) -> None:  # reported, never taken for an empty folder
            where = Path(exc.filename or top)
            self.skip(where, top, f"folder cannot be listed ({exc.strerror or exc})")

        for dirpath, dirnames, filenames in os.walk(top, onerror=unlisted):
            folder = Path(dirpath).relative_to(top).as_posix()
            prefix = "" if folder == "." else folder + "/"
            walked = []
            for name in sorted(dirnames):
                if name.startswith("."):
                    self.leave_out(Path(dirpath) / name, top, "hidden folder")
                elif rules.skips_folder(prefix + name):
                    self.leave_out(Path(dirpath) / name, top, "a folder a .gitignore ignores")
                else:
                    walked.append(name)
            dirnames[:] = walked
            for filename in sorted(filenames):
                file = Path(dirpath) / filename
                rule = rule_for(prefix + filename, self.include, self.exclude, rules)
                if rule:
                    self.leave_out(file, top, rule)
                else:
                    self.entry(file, real_top / (prefix + filename), real_top)

    def leave_out(self, path: Path, root: Path, rule: str) -> None:
        self.found.append(FoundFile(path, root, name=self.label(path), left_out=rule))

    def entry(self, file: Path, real: Path, real_top: Path) -> None:
        """One name found in a folder: classified by `lstat`, never opened here."""
        try:
            info = os.lstat(file)
        except OSError as exc:
            self.skip(file, real_top, f"cannot be examined ({exc.strerror or exc})")
            return
        if stat.S_ISLNK(info.st_mode):
            try:
                info = os.stat(file)
            except OSError as exc:
                self.skip(file, real_top, _broken_link(exc))
                return
            try:
                real = Path(os.path.realpath(file))
            except OSError:
                self.skip(file, real_top, CHANGING)
                return
            if not stat.S_ISREG(info.st_mode):
                self.skip(file, real_top, f"symbolic link to a {kind_of(info.st_mode)}")
                return
        elif not stat.S_ISREG(info.st_mode):
            self.skip(file, real_top, f"not a regular file ({kind_of(info.st_mode)})")
            return
        if self.roots:
            self.add_under_root(file, real)
        elif not real.is_relative_to(real_top):
            self.skip(file, real_top, "symlink to outside the folder")
        else:
            self.add(file, real_top, real, shown(real.relative_to(real_top).as_posix()))


def _broken_link(exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return "symbolic link loop"
    if exc.errno == errno.ENOENT:
        return "dangling symbolic link"
    return f"symbolic link that cannot be followed ({exc.strerror or exc})"


def discover_files(
    paths: Sequence[str | Path],
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    policy: ReadPolicy = DEFAULT_POLICY,
    lenient: bool = False,
    include_ignored: bool = False,
) -> list[FoundFile]:
    """Expand files and directory trees: every file met is taken, skipped with its reason,
    or left out by a rule and counted (`rule_for`).

    A file named explicitly is always taken (unless excluded); inside a tree, hidden files
    and folders are left out, and so are scratch files and what a `.gitignore` ignores unless
    `include_ignored` (`ragloom.loading.ignore`); a folder that cannot be listed is reported.
    Ids: relative to the folder given, or (with `policy.roots`) to the root a file lies in; a
    file named on its own gets its real path. The same file reached twice is taken once.
    """
    found = _Discovery(include, exclude, policy, lenient, include_ignored)
    for raw in paths:
        found.explicit(raw)
    return found.found


def document_id_for(file: FoundFile) -> str:
    """Stable id: the path relative to the indexed root, with forward slashes."""
    return shown(file.path.relative_to(file.root).as_posix())


def _markdown_title(text: str) -> str | None:
    for line in text.splitlines()[:50]:
        if line.startswith("# "):
            return line[2:].strip() or None
    return None


def _decoded(opened: OpenFile, first: bytes, lenient: bool) -> Iterator[str]:
    """An open file's text, decoded block by block; checks at the end it did not change."""
    decoder = StreamDecoder(opened.shown, sniff_encoding(first), lenient)
    yield decoder.decode(first)
    for block in opened.blocks_after_first():
        yield decoder.decode(block)
    yield decoder.decode(b"", final=True)
    opened.check_unchanged()


def _part_documents(
    file: FoundFile, parts: Iterator[tuple[int, str]], title: str | None, kind: str
) -> Iterator[Document]:
    """The documents of a file in several parts (see `ragloom.loading.parts`)."""
    for number, (offset, text) in enumerate(parts, start=1):
        if text.strip():
            metadata = {"path": file.id, "type": kind, "part": number, "offset": offset}
            doc_id = part_id(file.id, number)
            yield Document(doc_id, text, title, file.source, metadata)


def _text_documents(
    opened: OpenFile, first: bytes, file: FoundFile, lenient: bool, policy: ReadPolicy
) -> list[Document] | Iterator[Document]:
    """A text file's documents: a list when it is one part (read whole and closed), else a
    one-pass iterator that reads on as it goes (and closes the file at the end)."""
    parts = text_parts(_decoded(opened, first, lenient), policy.part_chars)
    offset, text = next(parts)
    second = next(parts, None)
    suffix = file.path.suffix.lower()
    title = _markdown_title(text) if suffix in MARKDOWN_SUFFIXES else None
    kind = language_for(file.path.name) or suffix.lstrip(".") or "text"
    if second is None:
        opened.close()
        if not text.strip():
            return []
        metadata = {"path": file.id, "type": kind}
        return [Document(id=file.id, text=text, title=title, source=file.source, metadata=metadata)]

    def every_part() -> Iterator[Document]:
        with opened:
            rest = chain([(offset, text), second], parts)
            yield from _part_documents(file, rest, title, kind)

    return every_part()


def load_file(
    file: FoundFile,
    lenient: bool = False,
    fields: JsonlFields | None = None,
    policy: ReadPolicy = DEFAULT_POLICY,
    known: Known | None = None,
    conversion: Conversion | None = None,
) -> LoadedFile:
    """Read one file: converts PDF, HTML, Word, ... (`ragloom.loading.converting`: `known`
    tells an indexed file as it is, `conversion` one started ahead), names binary content of
    no such format, raises on invalid text unless lenient, and on what the policy refuses.
    JSONL, CSV and TSV files stream record by record, long text files part by part
    (`ragloom.loading.parts`); code files get their language as `type`."""
    if file.left_out:
        return LoadedFile(file.path, skipped=file.left_out)
    if file.skip:
        return LoadedFile(file.path, skipped=file.skip)
    if file.error is not None:
        raise file.error
    fmt = format_for(file.path.name)
    if fmt is not None:
        return LoadedFile(file.path, *converted_file(file, policy, known, conversion, fmt))
    try:
        opened = OpenFile(file.real_path, file.real_root, file.shown, policy)
    except NotRegular as exc:
        return LoadedFile(file.path, skipped=str(exc))
    try:
        first = opened.first_block()
        encoding = sniff_encoding(first)
        sniffed = format_for(file.path.name, first) if encoding.codec == "utf-8" else None
        if sniffed is not None:  # a PDF by its content, whatever its name
            opened.close()
            return LoadedFile(file.path, *converted_file(file, policy, known, None, sniffed))
        if looks_binary(first, encoding):
            opened.close()
            raise unsupported(file.shown)
        if file.is_jsonl:
            return LoadedFile(file.path, file_records(opened, first, file, lenient, fields))
        if file.is_records:
            pieces = _decoded(opened, first, lenient)
            rows = table_documents(opened, pieces, file, lenient, fields)
            return LoadedFile(file.path, rows)
        return LoadedFile(file.path, _text_documents(opened, first, file, lenient, policy))
    except BaseException:
        opened.close()
        raise
