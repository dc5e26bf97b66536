"""What an index holds, store-independent, for comparing two indexes exactly: documents,
chunks, index terms, vectors, and the ranked hits of a few searches."""

from __future__ import annotations

from typing import Any

import ragloom
from ragloom.store.open import open_store

QUERIES = ["how are chunk ids numbered?", "hybrid search fusion weights", "backup restore index"]


def contents(location: Any) -> dict[tuple[str, str], tuple]:
    """(collection, document id) -> the document and its chunks with terms and vectors."""
    store = getattr(location, "store", None) or open_store(location, create=False, read_only=True)
    try:
        found: dict[tuple[str, str], tuple] = {}
        with store.snapshot():
            for name in sorted(store.collections()):
                for batch in store.export(name):
                    for new in batch:
                        doc = new.document
                        chunks = tuple(
                            (
                                c.n,
                                c.start,
                                c.end,
                                c.text,
                                repr(sorted(c.metadata.items())),
                                tuple(c.terms),
                                None if c.vector is None else bytes(c.vector.astype("<f4")),
                            )
                            for c in new.chunks
                        )
                        meta = repr(sorted(doc.metadata.items()))
                        key = (name, doc.id)
                        found[key] = (
                            doc.text,
                            doc.title,
                            doc.source,
                            meta,
                            new.content_hash,
                            chunks,
                        )
        return found
    finally:
        if getattr(location, "store", None) is None:
            store.close()


def searches(index: ragloom.Index, queries=QUERIES, modes=("lexical", "dense", "hybrid")):
    """Each query's top 10 (chunk id, score rounded to 5 places) in each mode."""
    out = {}
    for query in queries:
        for mode in modes:
            hits = index.search(query, top_k=10, mode=mode)
            out[(query, mode)] = [(h.chunk_id, round(h.score, 5)) for h in hits]
    return out
