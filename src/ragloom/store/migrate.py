"""`ragloom migrate SRC DST`: copy every collection of one store into another (an embedded
file into PostgreSQL and back), chunks, index terms and vectors included: nothing is
re-chunked or re-embedded, so the copy answers every search exactly as the original."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ragloom.errors import InputError
from ragloom.store.open import open_store
from ragloom.store.records import NewDocuments, WriteOutcome


@dataclass
class TransferReport:
    """What a copy of an index's data moved (a migrate, an export, an import)."""

    collections: list[str] = field(default_factory=list)
    documents: int = 0
    chunks: int = 0
    vectors: int = 0

    def stored(self, outcome: WriteOutcome, documents: NewDocuments) -> None:
        """Count a batch of `documents` the target stored (`outcome`)."""
        self.documents += outcome.documents
        self.chunks += outcome.chunks
        self.vectors += sum(c.vector is not None for d in documents for c in d.chunks)


@dataclass
class MigrateReport(TransferReport):
    target: str = ""  # where the copy went (a URL without its password)


def migrate(
    source: str | Path,
    target: str | Path,
    on_batch: Callable[[str, int], None] | None = None,
    batch: int = 200,
) -> MigrateReport:
    """Copy `source` into `target` (created if missing). A collection that already holds
    documents in the target is refused, so a migration never mixes two indexes."""
    report = MigrateReport()
    src = open_store(source, create=False, read_only=True)
    try:
        dst = open_store(target, create=True)
        report.target = dst.location
        try:
            existing = dst.collections()
            with dst.snapshot() as snap:
                busy = [n for n in src.collections() if n in existing and snap.collection(n).size()]
            if busy:
                raise InputError(
                    f"{dst.location} already holds documents in {', '.join(sorted(busy))}",
                    "migrate into an empty index",
                )
            for name, info in sorted(src.collections().items()):
                with dst.write() as write:
                    made = write.ensure_collection(name, info.config)
                    write.set_config(made, info.config)
                for documents in src.export(name, batch):
                    with dst.write() as write:
                        outcome = write.put(made, documents)
                    report.stored(outcome, documents)
                    if on_batch:
                        on_batch(name, outcome.documents)
                report.collections.append(name)
            dst.maintain(wait=True)
        finally:
            dst.close()
    finally:
        src.close()
    return report
