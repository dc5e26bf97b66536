"""Typed errors: each carries a stable code and a hint telling the user what to do next.

A hint that names a setting speaks the caller's language: `lenient=True` to a Python
caller, `--lenient` on the command line, `"lenient": true` over HTTP (see `worded`).
"""

from __future__ import annotations

from collections.abc import Mapping

AUDIENCES = ("library", "cli", "http")
# How each interface spells what a hint asks for: (library, command line, HTTP request).
SPELLINGS: dict[str, tuple[str, str, str]] = {
    "lenient": ("lenient=True", "--lenient", '"lenient": true in the request'),
    "lexical": ("mode='lexical'", "--mode lexical", '"mode": "lexical" in the request'),
    "reembed": (
        "Index.reembed(collection)",
        "`ragloom reembed --collection NAME`",
        "`ragloom reembed --collection NAME` on the server's index",
    ),
    "documents": ("Index.documents()", "`ragloom stats --documents`", "GET /documents"),
}


def worded(template: str) -> dict[str, str]:
    """A hint for every audience: `{lenient}` in `template` becomes each one's spelling."""
    return {
        audience: template.format(**{name: words[i] for name, words in SPELLINGS.items()})
        for i, audience in enumerate(AUDIENCES)
    }


class RagloomError(Exception):
    """Base class for every error ragloom raises on purpose.

    `hint` is for Python callers; `hints` may word it for the "cli" and "http" audiences.
    """

    code = "error"

    def __init__(
        self, message: str, hint: str | None = None, hints: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.hints = dict(hints or {})
        self.hint = hint if hint is not None else self.hints.get("library")

    def hint_for(self, audience: str) -> str | None:
        """The hint in the words of `audience`: "library", "cli" or "http"."""
        return self.hints.get(audience, self.hint)

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message


class InputError(RagloomError):
    """The caller gave something unusable (bad argument, missing path, bad record)."""

    code = "bad_input"


class InvalidRequest(InputError):
    """A call's arguments break the interface contract (`ragloom.contract`): a field
    missing, unknown, of the wrong type, not one of its choices or out of its bounds. The same
    code on every interface: the library, the command line, HTTP (400), the tools and MCP."""

    code = "bad_request"


class PathNotFound(InputError):
    code = "not_found"


class FilterTypeMismatch(InputError):
    """A filter compares a field with a value of another kind than every value it holds
    (`{"hives": {"$gt": "five"}}` on a field of numbers): it could match nothing."""

    code = "filter_type"


class DecodeError(InputError):
    """A file's text does not decode (UTF-8, or the UTF-16/32 its byte-order mark names);
    names the file, the byte offset in it and, when known, the line."""

    code = "invalid_utf8"

    def __init__(
        self,
        path: str,
        offset: int,
        reason: str,
        line: int | None = None,
        encoding: str = "UTF-8",
    ) -> None:
        where = f"byte {offset}" if line is None else f"byte {offset}, line {line}"
        super().__init__(
            f"{path}: invalid {encoding} at {where} ({reason})",
            hints=worded(
                "fix the file's encoding, or index it with {lenient} to replace bad bytes"
            ),
        )
        self.path = path
        self.offset = offset
        self.line = line


class RecordError(InputError):
    """A JSONL line could not be used; names the file and line number."""

    code = "bad_record"

    def __init__(self, path: str, line: int, reason: str, offset: int | None = None) -> None:
        super().__init__(
            f"{path}, line {line}: {reason}",
            hints=worded("fix that line, or index with {lenient} to skip bad lines"),
        )
        self.path = path
        self.line = line
        self.offset = offset  # byte offset of the line's start, when known


class IdConflict(InputError):
    """A file's document id already belongs to another file that still exists."""

    code = "id_conflict"


class FileError(InputError):
    """One file could not be indexed (the others of the run still are)."""

    code = "file_error"


class FileTooLarge(FileError):
    """A file is over the maximum file size."""

    code = "file_too_large"


class FileChanged(FileError):
    """A file changed (or a link appeared in its path) while it was being read."""

    code = "file_changed"


class FileRefused(FileError):
    """A file may not be read under the configured policy (e.g. it has other hard links)."""

    code = "file_refused"


class ReadTimeout(FileError):
    """Reading one file took longer than its time limit."""

    code = "read_timeout"


class UnsupportedFormat(FileError):
    """A file that is not text and not a format ragloom converts (named, never guessed at)."""

    code = "unsupported_format"


class DocumentError(FileError):
    """A document (PDF, Word, EPUB, ...) that cannot be read: malformed, or the converter
    failed on it."""

    code = "unreadable_document"


class PasswordProtected(DocumentError):
    """An encrypted document that needs a password to be read."""

    code = "password_protected"


class NoTextLayer(DocumentError):
    """A document with pages but no text to read (a scan: its pages are images)."""

    code = "no_text_layer"


class ArchiveTooLarge(DocumentError):
    """A zip-based document (DOCX, PPTX, EPUB) whose parts would expand past the limits."""

    code = "archive_too_large"


class ConvertTimeout(DocumentError):
    """Converting one file took longer than its time limit (it was stopped)."""

    code = "convert_timeout"


class IndexTimeout(RagloomError):
    """An indexing job was stopped: it ran past its time limit, or the server is shutting
    down. What was committed before stays; indexing again finishes the rest."""

    code = "timeout"


class WriterBusy(RagloomError):
    """Another process is indexing folders into this index (a watcher, or `ragloom index`):
    one writer of folders at a time, so their runs never interleave. Nothing was written."""

    code = "writer_busy"


class StoreError(RagloomError):
    """The index file cannot be used (corrupt, foreign, newer schema)."""

    code = "store_unavailable"


class StorageFull(StoreError):
    """A write failed because the disk (or the file system's quota) is full; nothing was
    written. Free space and retry: the index is as it was before the write."""

    code = "storage_full"


class StorageError(StoreError):
    """A write or read failed at the operating-system level (I/O error, read-only file
    system, permissions); the message carries the OS cause. Nothing was half-written."""

    code = "storage_error"


class ReadOnlyStore(StoreError):
    """A write reached only read-only database servers (replicas; the primary is down or
    unreachable). Nothing was written; searches keep working."""

    code = "read_only"


class ReadInterrupted(StoreError):
    """A read lost its database connection midway (a replica went away); running it again
    reads from another server. Readers retry it once by themselves."""

    code = "store_unavailable"


class ShardUnavailable(StoreError):
    """A shard of a shard set cannot be reached: a write that needs it fails at once (nothing
    written anywhere) and a `strict` search raises; other searches answer from the other
    shards, marked degraded, and writes to the other shards go on."""

    code = "shard_unavailable"


class NotFound(RagloomError):
    """An unknown document or collection was named."""

    code = "not_found"


class EmbeddingError(RagloomError):
    """Base class for failures of an embedding model or service."""

    code = "embedding_error"


class EmbedFailed(EmbeddingError):
    """The embedding service answered, but badly (error status or malformed body)."""

    code = "embed_failed"


class EmbeddingOffline(EmbeddingError):
    """The embedding service cannot be reached."""

    code = "offline"


class EmbeddingMismatch(EmbeddingError):
    """A collection's vectors come from another model than the one in use."""

    code = "embedding_mismatch"


class ModelUnavailable(EmbeddingError):
    """The local model's runtime or weights are not installed."""

    code = "model_unavailable"


class NeedsVectors(InputError):
    """A dense or diversity request on a collection that holds no vectors (a state conflict)."""

    code = "needs_vectors"


class MissingExtra(RagloomError):
    """An optional feature's package is not installed (`pip install 'ragloom[EXTRA]'`)."""

    code = "missing_extra"


class LLMError(RagloomError):
    """Base class for failures of an LLM service (query expansion, multi-hop, LLM rerank)."""

    code = "llm_error"


class LLMFailed(LLMError):
    """The LLM service answered, but badly (error status, malformed body, timed out)."""

    code = "llm_failed"


class LLMOffline(LLMError):
    """The LLM service cannot be reached."""

    code = "offline"


class RerankError(RagloomError):
    """Base class for failures of a reranker (a local cross-encoder or a rerank service)."""

    code = "rerank_error"


class RerankFailed(RerankError):
    """The reranker answered badly (error status, malformed body, timed out, model error)."""

    code = "rerank_failed"


class RerankOffline(RerankError):
    """The rerank service cannot be reached."""

    code = "offline"
