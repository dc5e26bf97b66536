"""What an indexing call did: `IndexReport`, the answer of `Index.add` and `Index.index_path`
(and, as JSON, of `ragloom index --json` and `POST /index`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # (a search never loads the file readers)
    from ragloom.loading.run import FileFailure


@dataclass
class IndexReport:
    """What an indexing call did."""

    documents: int = 0  # new or changed documents written
    unchanged: int = 0  # documents whose content hash matched: nothing done
    chunks: int = 0  # chunks written
    files: int = 0  # files read
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)
    left_out: list[tuple[str, str]] = field(default_factory=list)  # (path, rule): not read
    failed: list[FileFailure] = field(default_factory=list)  # files that could not be indexed
    pending: int = 0  # chunks stored without a vector (the embedding service failed)
    embedding_error: str | None = None  # why they are pending
    embedding_seconds: float = 0.0  # time spent computing vectors
    embedded: int = 0  # passages embedded (vectors reused from the cache are not counted)
    fragments: int = 0  # pieces shorter than the collection's min_chars, dropped
    unchanged_chunks: int = 0  # chunks held by the unchanged documents
    removed: int = 0  # documents of files gone from the folder (or now left out), removed
    held: list[str] = field(default_factory=list)  # why documents of missing files were kept

    @property
    def total_chunks(self) -> int:
        """Chunks the indexed documents hold now, written or already there."""
        return self.chunks + self.unchanged_chunks

    def to_dict(self, audience: str = "library") -> dict[str, Any]:
        """The JSON form the CLI (`--json`) and the HTTP sidecar answer with: `chunks` is
        what the documents hold now, `unchanged` whether nothing needed writing; hints in the
        words of `audience` ("library", "cli" or "http")."""
        return {
            "chunks": self.total_chunks,
            "unchanged": self.documents == 0,
            "documents": self.documents,
            "documents_unchanged": self.unchanged,
            "chunks_written": self.chunks,
            "fragments": self.fragments,
            "files": self.files,
            "skipped": [{"path": p, "reason": r} for p, r in self.skipped],
            "left_out": len(self.left_out),
            "left_out_files": [{"path": p, "rule": r} for p, r in self.left_out],
            "failed": [f.to_dict(audience) for f in self.failed],
            "pending": self.pending,
            "embedding_error": self.embedding_error,
            "embedding_seconds": round(self.embedding_seconds, 3),
            "embedded": self.embedded,
            "removed": self.removed,
            "held": self.held,
        }
