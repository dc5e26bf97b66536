"""The bookkeeping around every write of `Index`: the fusion profile told of it, chunks left
waiting for vectors filled once the service answers, the stale ids of a file run removed, and
a folder's re-index made to mirror the folder (`ragloom.loading.mirror`)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from ragloom.engine.ingest import Ingest
from ragloom.engine.refresh import FusionProfiles
from ragloom.engine.report import IndexReport
from ragloom.engine.stored_files import StoredFileIds
from ragloom.engine.vectors import VectorPlan
from ragloom.enrich import Enricher
from ragloom.store.lease import command_line
from ragloom.types import Document

if TYPE_CHECKING:  # (the file readers load with the first write of files, not for a search)
    from ragloom.loading.files import FoundFile
    from ragloom.loading.run import FileRun

# Seconds a folder run waits for another process's writer lease before it is refused.
LEASE_WAIT = float(os.environ.get("RAGLOOM_WRITER_WAIT", "10"))


class Writes:
    """Writes through the ingest with the profile and pending-vector upkeep they need."""

    def __init__(self, ingest: Ingest, profiles: FusionProfiles) -> None:
        self.ingest, self.profiles = ingest, profiles

    def _after(self, report: IndexReport, plan: VectorPlan) -> None:
        if report.chunks and not report.embedding_error:
            if not plan.later:  # the service answered: chunks left waiting get theirs too
                self.ingest.fill_waiting()
            self.profiles.after_write()

    def add(
        self,
        documents: Iterable[Document],
        collection: str,
        on_batch: Callable[[int], None] | None,
        enrichers: Sequence[Enricher],
        on_embed_error: str,
    ) -> IndexReport:
        plan = VectorPlan(on_embed_error)
        with self.profiles.writing():
            report = self.ingest.add(documents, collection, on_batch, enrichers, plan=plan)
            self._after(report, plan)
        return report

    def lease(self, wait: float | None = None) -> AbstractContextManager:
        """The index's writer lease (one writer of folders at a time: `ragloom.store.lease`),
        waited for `wait` seconds (default `LEASE_WAIT`)."""
        return self.ingest.store.writer_lease(command_line(), LEASE_WAIT if wait is None else wait)

    def files(
        self, run: FileRun, collection: str, enrichers: Sequence[Enricher], plan: VectorPlan
    ) -> IndexReport:
        """A run's documents written, then the ids its files no longer hold removed (under
        the writer lease)."""
        with self.lease(), self.profiles.writing():
            report = self.ingest.add_files(run, collection, enrichers, plan)
            self._after(report, plan)
            self.delete(run.stale, collection)  # stored under another id, or a part gone
        report.files, report.skipped, report.failed = run.done, run.skipped, run.failed
        report.left_out = run.left_out
        return report

    def folders(
        self,
        run: FileRun,
        paths: Sequence[str | os.PathLike[str]],
        collection: str,
        enrichers: Sequence[Enricher],
        plan: VectorPlan,
        keep_missing: bool,
    ) -> IndexReport:
        """`files`, then the mirror of the folders among `paths` unless `keep_missing`, both
        under one hold of the writer lease."""
        with self.lease():
            report = self.files(run, collection, enrichers, plan)
            if not keep_missing:
                self.mirror(report, paths, run.files, collection)
        return report

    def delete_document(self, doc_id: str, collection: str) -> int:
        """Remove one document (`NotFound` when missing); returns its chunks' count."""
        with self.profiles.writing():
            removed = self.ingest.delete(doc_id, collection)
        if removed:
            self.profiles.background.schedule()
        return removed

    def delete(self, doc_ids: Sequence[str], collection: str) -> int:
        """Remove the documents of `doc_ids` that exist; returns how many were."""
        with self.profiles.writing():
            removed = self.ingest.delete_many(list(doc_ids), collection)
        if removed:
            self.profiles.background.schedule()
        return removed

    def mirror(
        self,
        report: IndexReport,
        paths: Sequence[str | os.PathLike[str]],
        found: Iterable[FoundFile],
        collection: str,
    ) -> None:
        """Remove the documents of files gone from the folders among `paths` (or left out
        by the walk's rules now); the report says how many, or why none."""
        from ragloom.loading.mirror import mirror_folders

        stored = StoredFileIds(self.ingest.store, collection)
        mirrored = mirror_folders(stored, paths, found)
        report.removed = self.delete(mirrored.remove, collection)
        report.held = mirrored.held
