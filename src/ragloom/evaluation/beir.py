"""Load a BEIR-layout test collection: corpus.jsonl, queries.jsonl and qrels/<split>.tsv.

Ids are always kept as strings (BEIR ids often look like integers, and "01" != "1").
Every problem is reported with the file and, where there is one, the 1-based line number.
"""

from __future__ import annotations

import json
from collections.abc import Container, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import DecodeError, InputError, PathNotFound, RecordError
from ..types import Document

__all__ = ["BeirDataset", "load_beir"]

_QRELS_HEADER = "query-id"
# What a BEIR folder holds and how to make one: the hint of every missing-folder/file error.
LAYOUT_HINT = (
    'a BEIR folder holds corpus.jsonl (one {"_id", "title", "text"} a line), '
    'queries.jsonl (one {"_id", "text"} a line) and qrels/test.tsv (a header line '
    "query-id<TAB>corpus-id<TAB>score, then one judged pair a line); make one from your own "
    "documents and questions you have judged (docs/evaluation.md shows how), or use a "
    "published BEIR collection such as SciFact, which comes in this layout"
)


@dataclass
class BeirDataset:
    """A BEIR collection: the corpus is streamed from disk, queries and qrels are in memory."""

    name: str
    corpus_path: Path
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]

    def iter_corpus(self) -> Iterator[Document]:
        """Stream the corpus as Documents, one line at a time, so it never sits in memory."""
        source = str(self.corpus_path)
        seen: set[str] = set()
        for number, record in _iter_jsonl(self.corpus_path):
            doc_id = _record_id(record, self.corpus_path, number)
            if doc_id in seen:
                raise RecordError(source, number, f"duplicate _id {doc_id!r}")
            seen.add(doc_id)
            text = record.get("text")
            if not isinstance(text, str):
                reason = 'missing "text"' if text is None else '"text" must be a string'
                raise RecordError(source, number, reason)
            title = record.get("title")
            if title is not None and not isinstance(title, str):
                raise RecordError(source, number, '"title" must be a string or null')
            metadata = {k: v for k, v in record.items() if k not in ("_id", "text", "title")}
            yield Document(
                id=doc_id, text=text, title=title or None, source=source, metadata=metadata
            )


def load_beir(folder: str | Path, split: str = "test") -> BeirDataset:
    """Read a BEIR folder's queries and qrels for one split and check the corpus is usable."""
    root = Path(folder)
    if not root.exists():
        raise PathNotFound(f"BEIR folder not found: {root}", LAYOUT_HINT)
    if not root.is_dir():
        raise InputError(f"not a folder: {root}", f"give the folder itself: {LAYOUT_HINT}")
    corpus_path = root / "corpus.jsonl"
    queries_path = root / "queries.jsonl"
    qrels_path = root / "qrels" / f"{split}.tsv"
    for path in (corpus_path, queries_path):
        _require_file(path)
    if not qrels_path.is_file():
        splits = sorted(p.stem for p in (root / "qrels").glob("*.tsv"))
        available = ", ".join(splits) if splits else "none"
        raise PathNotFound(
            f"qrels split {split!r} not found: {qrels_path}", f"available splits: {available}"
        )

    _check_corpus_not_empty(corpus_path)
    qrels = _read_qrels(qrels_path)
    queries = _read_queries(queries_path, wanted=qrels.keys())
    missing = [qid for qid in qrels if qid not in queries]
    if missing:
        shown = ", ".join(repr(q) for q in missing[:5]) + (" ..." if len(missing) > 5 else "")
        raise InputError(
            f"{qrels_path}: {len(missing)} judged queries are not in {queries_path}: {shown}"
        )
    return BeirDataset(
        name=root.resolve().name, corpus_path=corpus_path, queries=queries, qrels=qrels
    )


def _require_file(path: Path) -> None:
    """Raise PathNotFound unless path is an existing file."""
    if not path.is_file():
        raise PathNotFound(f"BEIR file not found: {path}", LAYOUT_HINT)


def _iter_lines(path: Path) -> Iterator[tuple[int, str]]:
    """Yield (line number, decoded line) for non-blank lines, failing clearly on bad UTF-8."""
    offset = 0
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                reason = f"line {number}: {exc.reason}"
                raise DecodeError(str(path), offset + exc.start, reason) from None
            offset += len(raw)
            if number == 1:
                line = line.removeprefix("\ufeff")
            if line.strip():
                yield number, line


def _iter_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for each JSON line, raising RecordError on a malformed one."""
    for number, line in _iter_lines(path):
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise RecordError(str(path), number, f"invalid JSON: {exc.msg}") from None
        if not isinstance(record, dict):
            raise RecordError(str(path), number, "expected a JSON object")
        yield number, record


def _record_id(record: dict[str, Any], path: Path, number: int) -> str:
    """Return the record's _id as a string (integers are accepted and converted)."""
    value = record.get("_id")
    if value is None:
        raise RecordError(str(path), number, 'missing "_id"')
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise RecordError(str(path), number, '"_id" must be a string')
    value = str(value)
    if not value:
        raise RecordError(str(path), number, '"_id" is empty')
    return value


def _check_corpus_not_empty(path: Path) -> None:
    """Fail early (InputError) if the corpus has no records; validates the first line too."""
    for _number, _record in _iter_jsonl(path):
        return
    raise InputError(f"corpus is empty: {path}", "corpus.jsonl needs one JSON document a line")


def _read_queries(path: Path, wanted: Container[str]) -> dict[str, str]:
    """Read queries.jsonl, keeping only the ids in `wanted` (the judged queries)."""
    queries: dict[str, str] = {}
    seen: set[str] = set()
    for number, record in _iter_jsonl(path):
        qid = _record_id(record, path, number)
        if qid in seen:
            raise RecordError(str(path), number, f"duplicate _id {qid!r}")
        seen.add(qid)
        text = record.get("text")
        if not isinstance(text, str):
            reason = 'missing "text"' if text is None else '"text" must be a string'
            raise RecordError(str(path), number, reason)
        if qid in wanted:
            queries[qid] = text
    return queries


def _read_qrels(path: Path) -> dict[str, dict[str, int]]:
    """Read a qrels TSV (optional `query-id` header) into query id -> doc id -> grade."""
    qrels: dict[str, dict[str, int]] = {}
    for number, line in _iter_lines(path):
        fields = line.rstrip("\r\n").split("\t")
        if number == 1 and fields[0].strip() == _QRELS_HEADER:
            continue
        if len(fields) != 3:
            reason = f"expected 3 tab-separated fields, got {len(fields)}"
            raise RecordError(str(path), number, reason)
        qid, doc_id, score = (f.strip() for f in fields)
        if not qid or not doc_id:
            raise RecordError(str(path), number, "empty query-id or corpus-id")
        grade = _parse_grade(score)
        if grade is None:
            raise RecordError(str(path), number, f"score must be an integer, got {score!r}")
        judgments = qrels.setdefault(qid, {})
        if doc_id in judgments:
            raise RecordError(str(path), number, f"duplicate judgment for ({qid}, {doc_id})")
        judgments[doc_id] = grade
    if not qrels:
        raise InputError(f"qrels file has no judgments: {path}")
    return qrels


def _parse_grade(score: str) -> int | None:
    """Parse an integer grade; also accepts integral floats such as '1.0'; None if invalid."""
    try:
        return int(score)
    except ValueError:
        pass
    try:
        value = float(score)
    except ValueError:
        return None
    return int(value) if value.is_integer() else None
