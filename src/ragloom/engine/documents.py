"""What a document becomes before the store sees it: checked fields, canonical metadata JSON,
the content hash that says whether it changed, and the index terms of its chunks."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from functools import lru_cache
from json.encoder import encode_basestring  # type: ignore[attr-defined]
from typing import Any

import numpy as np

from ragloom.chunking import ChunkPolicy
from ragloom.chunking.policy import CHUNKER_VERSION
from ragloom.errors import InputError
from ragloom.segments.postings import concat_ranges
from ragloom.store.records import ChunkTerms
from ragloom.text import Tokenizer
from ragloom.types import Document, Structure


@lru_cache(maxsize=64)
def _policy_fingerprint(policy: ChunkPolicy) -> str:
    return json.dumps({**policy.to_dict(), "chunker": CHUNKER_VERSION}, sort_keys=True)


@lru_cache(maxsize=256)
def _settings_tail(policy: ChunkPolicy, title_weight: int, salt: str) -> str:
    """The JSON of [policy fingerprint, title weight, salt] without its brackets."""
    return json.dumps([_policy_fingerprint(policy), title_weight, salt], ensure_ascii=False)[1:-1]


def _json_text(value: str | None) -> str:
    """`json.dumps(value, ensure_ascii=False)` for a string or None, without building an
    encoder per call (this runs for every document)."""
    return "null" if value is None else encode_basestring(value)


_metadata_json = json.JSONEncoder(ensure_ascii=False, sort_keys=True, allow_nan=False).encode


def content_hash(
    doc: Document, metadata: str, policy: ChunkPolicy, title_weight: int, salt: str = ""
) -> str:
    """Fingerprint of everything that shapes a document's chunks and postings: its fields,
    its metadata JSON (`checked_document`'s), its chunk policy, the collection's title weight
    and `salt` (the enrichers'). The bytes hashed are those of one JSON list of the
    settings, then the text. A converted file's is its `converted_hash`."""
    if doc.raw_hash is not None:
        return converted_hash(doc.raw_hash, doc.source, policy, title_weight, salt)
    # json.dumps([title, source, metadata, policy, weight, salt], sort_keys=True), written
    # out so the metadata JSON computed once per document is reused
    tail = _settings_tail(policy, title_weight, salt)
    settings = f"[{_json_text(doc.title)}, {_json_text(doc.source)}, {metadata}, {tail}]"
    digest = hashlib.sha256(settings.encode("utf-8", "surrogatepass"))
    digest.update(b"\x00")
    digest.update(doc.text.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def converted_hash(
    raw_hash: str, source: str | None, policy: ChunkPolicy, title_weight: int, salt: str
) -> str:
    """The content hash of a converted file: its raw hash (bytes and converter version, which
    decide its text, title, metadata and structure) with what shapes its chunks. Known before
    the file is converted, so an unchanged file is never converted again."""
    tail = _settings_tail(policy, title_weight, salt)
    settings = f"[{_json_text(source)}, {tail}]"
    digest = hashlib.sha256(b"converted\x00" + settings.encode("utf-8", "surrogatepass"))
    digest.update(raw_hash.encode("ascii"))
    return digest.hexdigest()


def chunk_terms(
    prepared: Sequence[tuple[Document, Sequence[Any]]], tokenizer: Tokenizer, title_weight: int
) -> ChunkTerms:
    """The index terms of every chunk of `prepared` (documents and their spans), in order:
    a chunk's own terms, then its document's title terms `title_weight` times."""
    texts: list[str] = [""]  # text 0: the title of documents without one
    own: list[int] = []  # which text is each chunk's own
    title: list[int] = []  # which text is its document's title
    for doc, spans in prepared:
        first = len(texts)
        texts.extend(span.text for span in spans)
        own.extend(range(first, len(texts)))
        if doc.title:
            texts.append(doc.title)
        title.extend([len(texts) - 1 if doc.title else 0] * len(spans))
    numbers, counts, names = tokenizer.numbered(texts)
    starts = np.cumsum(counts) - counts
    mine, titles = np.array(own, np.int64), np.array(title, np.int64)
    pieces = [mine] + [titles] * title_weight  # per chunk: its text, then the title w times
    positions = concat_ranges(
        np.column_stack([starts[p] for p in pieces]).ravel(),
        np.column_stack([counts[p] for p in pieces]).ravel(),
    )
    lengths = counts[mine] + title_weight * counts[titles]
    return ChunkTerms(numbers[positions], lengths, names)


def embedding_text(title: str | None, text: str) -> str:
    """What the dense model reads for a chunk: its document's title, then its text."""
    return f"{title}\n{text}" if title else text


def _storable(value: str, what: str) -> None:
    """Text must encode as UTF-8: JSON allows lone surrogate escapes that SQLite cannot store."""
    if value.isascii():
        return
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(f"{what} is not valid Unicode (it holds a lone surrogate)") from None


def check_document(doc: Any) -> Document:
    """A Document fit to store, or `InputError` saying what is wrong with it."""
    return checked_document(doc)[0]


def checked_document(doc: Any) -> tuple[Document, str]:
    """A Document fit to store and its metadata as canonical JSON (sorted keys, text as
    is; what the store keeps and the content hash covers), or `InputError`."""
    if not isinstance(doc, Document):
        raise InputError(f"expected a ragloom.Document, got {type(doc).__name__}")
    if not isinstance(doc.id, str) or not doc.id.strip():
        raise InputError("a document id must be a non-empty string")
    _storable(doc.id, "a document id")
    if not isinstance(doc.text, str):
        raise InputError(f"document {doc.id!r}: text must be a string")
    _storable(doc.text, f"document {doc.id!r}: text")
    for field_name in ("title", "source", "collection"):
        value = getattr(doc, field_name)
        if value is not None and not isinstance(value, str):
            raise InputError(f"document {doc.id!r}: {field_name} must be a string")
        if value is not None:
            _storable(value, f"document {doc.id!r}: {field_name}")
    if doc.collection is not None and not doc.collection.strip():
        raise InputError(f"document {doc.id!r}: collection must not be blank")
    if not isinstance(doc.metadata, dict):
        raise InputError(f"document {doc.id!r}: metadata must be a JSON object (dict)")
    try:
        metadata = _metadata_json(doc.metadata) if doc.metadata else "{}"
    except (TypeError, ValueError) as exc:
        raise InputError(
            f"document {doc.id!r}: metadata is not plain JSON ({exc})",
            "use strings, finite numbers, booleans, null, lists and objects",
        ) from None
    _storable(metadata, "metadata")
    if doc.structure is not None and not isinstance(doc.structure, Structure):
        raise InputError(f"document {doc.id!r}: structure must be a ragloom.Structure")
    if doc.raw_hash is not None and not (isinstance(doc.raw_hash, str) and doc.raw_hash.isascii()):
        raise InputError(f"document {doc.id!r}: raw_hash must be an ASCII string")
    return doc, metadata


def check_collection_name(collection: Any) -> str:
    if not isinstance(collection, str) or not collection.strip():
        raise InputError(f"a collection name must be a non-empty string, got {collection!r}")
    _storable(collection, "a collection name")
    return collection
