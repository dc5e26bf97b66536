"""What a document must be before anything is done with it: checked fields (text the store
can hold), canonical metadata JSON, a collection name, and the write batches they go in."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from ragloom.errors import InputError
from ragloom.types import Document, Structure

_metadata_json = json.JSONEncoder(ensure_ascii=False, sort_keys=True, allow_nan=False).encode


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


CheckedBatch = list[tuple[Document, str]]  # documents with their metadata JSON


def checked_batches(
    documents: Iterable[Any], collection: str, most: int, most_chars: int
) -> Iterator[tuple[str, CheckedBatch]]:
    """The documents checked (`checked_document`) and grouped by the collection each goes to
    (its own, else `collection`), as (collection, batch)s of at most `most` documents or
    about `most_chars` characters: each full batch as soon as it fills, then what is left."""
    batches: dict[str, CheckedBatch] = {}
    chars: dict[str, int] = {}
    for doc in documents:
        checked = checked_document(doc)
        target = doc.collection or collection
        batch = batches.setdefault(target, [])
        batch.append(checked)
        chars[target] = chars.get(target, 0) + len(doc.text)
        if len(batch) >= most or chars[target] >= most_chars:
            yield target, batch
            batches[target], chars[target] = [], 0
    for target, batch in batches.items():
        if batch:
            yield target, batch
