"""Whether a document changed: the content hash over everything that shapes its chunks and
postings (fields, metadata JSON, chunk policy, title weight, enrichers), compared with the
stored one before anything is chunked or embedded."""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from json.encoder import encode_basestring  # type: ignore[attr-defined]

from ragloom.chunking import ChunkPolicy
from ragloom.chunking.policy import CHUNKER_VERSION
from ragloom.types import Document


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
