"""What a run over files asks the store: the ids files are stored under, and whether a
converted file is stored as it is now (so it is not converted again)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ragloom.config import CollectionConfig
from ragloom.engine.fingerprint import converted_hash
from ragloom.enrich import Enricher, enrichers_fingerprint
from ragloom.store.base import Store
from ragloom.store.records import CollectionInfo


class StoredFileIds:
    """`ragloom.loading.run.FileIds` over one collection of the store (one snapshot a call)."""

    def __init__(self, store: Store, collection: str) -> None:
        self.store, self.collection = store, collection

    def by_source(self, sources: Sequence[str]) -> dict[str, list[str]]:
        with self.store.snapshot() as snap:
            return snap.file_ids_by_source(self.collection, sources)

    def owners(self, doc_ids: Sequence[str]) -> dict[str, str | None]:
        with self.store.snapshot() as snap:
            return snap.sources_of(self.collection, doc_ids)

    def under(self, folder: str) -> dict[str, str]:
        """The file documents whose source lies under `folder` (id -> source)."""
        with self.store.snapshot() as snap:
            if self.collection not in snap.collections():
                return {}
            return snap.file_documents_under(self.collection, folder)


def known_converted(
    store: Store, info: CollectionInfo, enrichers: Sequence[Enricher]
) -> Callable[[str, str, str], bool]:
    """Whether a converted file (id, source, raw hash) is stored as it is now: its content
    hash is known before conversion (`converted_hash`)."""
    config = CollectionConfig.from_dict(info.config)
    salt = enrichers_fingerprint(enrichers)

    def known(doc_id: str, source: str, raw: str) -> bool:
        policy = config.policy_for(source)
        expected = converted_hash(raw, source, policy, config.title_weight, salt)
        with store.snapshot() as snap:
            return snap.content_hashes(info.name, [doc_id]).get(doc_id) == expected

    return known
