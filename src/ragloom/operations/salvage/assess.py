"""From recovered rows to documents: which documents are whole (their row and every chunk
row read, the text rebuilt exactly), which are lost, and the vectors still at hand (in the
`vectors` rows or in the segment files beside the database, which page damage leaves alone).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ragloom.operations.salvage.rows import Recovered, recover
from ragloom.store.document_text import text_hash
from ragloom.types import Document


@dataclass
class SalvagedCollection:
    """One collection as far as it could be read."""

    name: str
    config: dict[str, Any] | None  # None: its settings were on a damaged page
    documents: list[Document] = field(default_factory=list)
    vectors: dict[bytes, np.ndarray] = field(default_factory=dict)  # text hash -> vector
    lost: list[str] = field(default_factory=list)  # ids of documents found incomplete
    chunks: int = 0
    vectors_lost: int = 0  # chunks of whole documents whose vector could not be read

    def summary(self) -> dict[str, Any]:
        return {
            "documents": len(self.documents),
            "chunks": self.chunks,
            "lost_documents": sorted(self.lost),
            "vectors_lost": self.vectors_lost,
            "settings_lost": self.config is None,
        }


@dataclass
class Salvage:
    """What a damaged index still holds, and what the damage took."""

    recovered: Recovered
    collections: dict[str, SalvagedCollection]
    unnamed_documents: int = 0  # document rows lost whose chunks remain (ids unknown)
    missing_chunk_rows: int = 0  # chunk rows segment files list that were not found
    segments: dict[str, str] = field(default_factory=dict)  # segment file -> its problem

    def lost_documents(self) -> list[tuple[str, str]]:
        return sorted((c.name, d) for c in self.collections.values() for d in c.lost)

    def to_dict(self) -> dict[str, Any]:
        found = self.recovered
        return {
            "pages": found.pages,
            "unreadable_pages": len(found.unreadable),
            "damaged_pages_by_table": found.lost_in,
            "header_readable": found.header_ok,
            "rows_found_by_scanning": found.found_by_scan,
            "collections": {n: c.summary() for n, c in sorted(self.collections.items())},
            "document_rows_lost_with_unknown_ids": self.unnamed_documents,
            "chunk_rows_missing": self.missing_chunk_rows,
            "segment_files": self.segments,
        }


def assess(path: Path) -> Salvage:
    """Read everything readable of the index file at `path` (never written to)."""
    found = recover(path)
    rows = found.rows
    names = {rid: (v[1], _json(v[2])) for rid, v in rows["collections"].items()}
    chunks = _chunks_by_document(rows["chunks"])
    vectors = _vectors(path, found)
    salvage = Salvage(found, {})
    for doc_row, v in sorted(rows["documents"].items()):
        _, collection_id, doc_id, source, title, meta, _, length, gaps, _ = v
        name, config = names.get(collection_id, (f"collection-{collection_id}", None))
        into = salvage.collections.setdefault(name, SalvagedCollection(name, config))
        mine = chunks.pop(doc_row, [])
        text = _whole_text(gaps, [(c[4], c[6]) for c in mine], length)
        metadata = _json(meta)
        if text is None or metadata is None:
            into.lost.append(doc_id)
            continue
        into.documents.append(Document(doc_id, text, title, source, metadata))
        into.chunks += len(mine)
        for chunk in mine:
            vector = vectors.get(chunk[0])
            if vector is not None:
                into.vectors[text_hash(title, chunk[6])] = vector
            else:
                into.vectors_lost += 1
    for name, config in names.values():
        salvage.collections.setdefault(name, SalvagedCollection(name, config))
    for doc_row, (collection_id, doc_id) in sorted(found.names.items()):
        if doc_row in rows["documents"]:
            continue  # read (whole, or listed as lost above)
        name, config = names.get(collection_id, (f"collection-{collection_id}", None))
        salvage.collections.setdefault(name, SalvagedCollection(name, config)).lost.append(doc_id)
        chunks.pop(doc_row, None)
    salvage.unnamed_documents = len(chunks)  # chunk groups whose document is named nowhere
    salvage.missing_chunk_rows, salvage.segments = _segment_rows(path, found)
    for collection in salvage.collections.values():
        if not (collection.config or {}).get("embedding"):
            collection.vectors_lost = 0
    return salvage


def _json(text: Any) -> Any:
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return None


def _chunks_by_document(chunk_rows: dict[int, list]) -> dict[int, list]:
    """Chunk rows (rowid first) by document row; of two rows for one chunk number (a stale
    row from a free page), the newer one."""
    best: dict[tuple[int, int], list] = {}
    for rowid, v in chunk_rows.items():
        key = (v[2], v[3])
        if key not in best or best[key][0] < rowid:
            best[key] = [rowid, *v[1:]]
    grouped: dict[int, list] = {}
    for (document, _), row in sorted(best.items()):
        grouped.setdefault(document, []).append(row)
    return grouped


def _whole_text(gaps: str | None, pieces: list[tuple[int, str]], length: int) -> str | None:
    """The document's text if its pieces cover it exactly (overlaps agreeing), else None."""
    extra = _json(gaps) if gaps else []
    if extra is None:
        return None
    parts = sorted([*((int(s), t) for s, t in extra), *pieces], key=lambda p: p[0])
    built = ""
    for start, text in parts:
        if start > len(built):
            return None  # a hole: a chunk row is missing
        overlap = len(built) - start
        if built[start:] != text[:overlap]:
            return None  # two pieces disagree: one of them is not what was written
        built += text[overlap:]
    return built[:length] if len(built) >= length else None


def _vectors(path: Path, found: Recovered) -> dict[int, np.ndarray]:
    """Vectors by chunk row: the `vectors` rows, then the segment files' (live ones first)."""
    out: dict[int, np.ndarray] = {}
    for segment in _segments(path, found):
        if segment.vectors is None or segment.has_vector is None:
            continue
        for i, row in enumerate(segment.rows.tolist()):
            if segment.has_vector[i] and row not in out:
                out[row] = np.array(segment.vectors[i], np.float32)
    for rowid, v in found.rows["vectors"].items():
        out[rowid] = np.frombuffer(v[3], np.float32).copy()
    return out


def _segments(path: Path, found: Recovered) -> list:
    from ragloom.segments.persist import load_segment

    folder = path.with_name(path.name + "-segments")
    manifest = found.rows["segments"]
    live = [v[0] for v in manifest.values() if v[7] is None]
    names = live or sorted(p.stem for p in folder.glob("*.seg"))
    out = []
    for name in names:
        try:
            out.append(load_segment(folder / f"{name}.seg", name))
        except (OSError, ValueError, KeyError):
            continue
    return out


def _segment_rows(path: Path, found: Recovered) -> tuple[int, dict[str, str]]:
    """Chunk rows live segment files list that were not found; each unusable file's problem."""
    from ragloom.segments.persist import load_segment

    folder = path.with_name(path.name + "-segments")
    problems: dict[str, str] = {}
    listed: set[int] = set()
    for v in found.rows["segments"].values():
        if v[7] is not None:
            continue
        try:
            segment = load_segment(folder / f"{v[0]}.seg", v[0])
        except (OSError, ValueError, KeyError) as exc:
            problems[f"{v[0]}.seg"] = str(exc)
            continue
        listed.update(segment.rows.tolist())
    removed = set(found.rows["removed"])  # chunk_id is the rowid
    missing = listed - set(found.rows["chunks"]) - removed
    return len(missing), problems
