"""The content hash (what decides that a document is unchanged) keeps its exact value: an
index built by an earlier version skips unchanged documents instead of re-indexing them."""

from __future__ import annotations

import hashlib
import json

import pytest

from ragloom import Document
from ragloom.config import CollectionConfig
from ragloom.engine.documents import checked_document
from ragloom.engine.fingerprint import _policy_fingerprint, content_hash
from ragloom.errors import InputError


def previous_content_hash(doc: Document, config: CollectionConfig, salt: str = "") -> str:
    """The formula as it was written before the metadata JSON was computed once."""
    settings = json.dumps(
        [
            doc.title,
            doc.source,
            doc.metadata,
            _policy_fingerprint(config.policy_for(doc.source, doc.language)),
            config.title_weight,
            salt,
        ],
        ensure_ascii=False,
        sort_keys=True,
        default=str,
    )
    digest = hashlib.sha256(settings.encode("utf-8", "surrogatepass"))
    digest.update(b"\x00")
    digest.update(doc.text.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


DOCUMENTS = [
    Document("a", "plain text"),
    Document("b", "text", title="Título «quoted»", source="notes/b.md"),
    Document("c", "x", metadata={"z": 1, "a": [1.5, None, True], "nested": {"b": "é", "a": {}}}),
    Document("d", "fn main() {}", source="src/main.rs", language="rust"),
    Document("e", "", title="only a title", metadata={"tags": ["x", "y"], "n": -0.0}),
    Document("f", 'quotes " and \\ backslashes', metadata={"k": 'v "q"\n'}),
]


@pytest.mark.parametrize("doc", DOCUMENTS, ids=lambda d: d.id)
@pytest.mark.parametrize("salt", ["", "enrichers:v1"])
def test_content_hash_is_unchanged(doc: Document, salt: str):
    config = CollectionConfig(title_weight=2)
    _, metadata = checked_document(doc)
    policy = config.policy_for(doc.source, doc.language)
    expected = previous_content_hash(doc, config, salt)
    assert content_hash(doc, metadata, policy, config.title_weight, salt) == expected


def test_metadata_json_is_canonical_and_checked():
    _, metadata = checked_document(Document("a", "t", metadata={"b": 1, "a": "é"}))
    assert metadata == '{"a": "é", "b": 1}'
    with pytest.raises(InputError, match="not plain JSON"):
        checked_document(Document("a", "t", metadata={"x": float("nan")}))
    with pytest.raises(InputError, match="not plain JSON"):
        checked_document(Document("a", "t", metadata={1: "a", "b": 2}))
