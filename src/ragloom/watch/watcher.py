"""`Watcher`: keeps an index equal to its folders until stopped.

It holds the index's writer lease (`ragloom.store.lease`) for as long as it runs, sweeps the
folders at start (catching up whatever changed while nobody watched), then applies OS events
in coalesced batches through the same file run as `ragloom index` (`Index.index_run`), and
sweeps again after lost events and periodically. A change is written lexically first
(searchable at once, its vectors pending) and its vectors are filled in small slices while
the folder is quiet; vectors of unchanged text, a renamed file's included, are reused, never
embedded again. `stop()` writes what is queued, sweeps once more, then lets the lease go.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from ragloom.engine.report import IndexReport
from ragloom.engine.vectors import VectorPlan
from ragloom.enrich import Enricher
from ragloom.errors import EmbeddingError, InputError, RagloomError, WriterBusy
from ragloom.index import DEFAULT_COLLECTION, Index
from ragloom.loading import FileRun, JsonlFields, ReadPolicy
from ragloom.loading.files import FoundFile
from ragloom.loading.mirror import MirrorOutcome, kept_sources, plan_removals
from ragloom.store.lease import command_line
from ragloom.watch.changes import LONGEST, QUIET, Batch, ChangeQueue
from ragloom.watch.events import native_events
from ragloom.watch.marks import Mark, Marks, mark_of, marks_file
from ragloom.watch.paths import Folder, WalkOptions, candidates, sort_paths
from ragloom.watch.status import WatchStatus
from ragloom.watch.sweep import sweep

log = logging.getLogger("ragloom.watch")

SWEEP_EVERY = float(os.environ.get("RAGLOOM_SWEEP_EVERY", "600"))  # seconds between sweeps
POLL_AT_LEAST = 2.0  # seconds between sweeps when polling, at the least...
POLL_SHARE = 100  # ...and this many times a sweep's own time (under 1% of a core)
RETRY_SWEEP = 5.0  # seconds after a failed batch before a sweep catches up
FILL_SLICE = 16  # chunks embedded at a time while the folder is quiet
FILL_BACKOFF = 300.0  # longest wait after the embedding service failed
_WATCHING: dict[str, str] = {}  # the indexes watched in this process -> their folders
_WATCHING_LOCK = threading.Lock()


class Watcher:
    """Keep `index` equal to `paths` (folders): `start()`, then `stop()` (or `with`)."""

    def __init__(
        self,
        index: Index,
        paths: Sequence[str | os.PathLike[str]],
        collection: str = DEFAULT_COLLECTION,
        *,
        include: Sequence[str] = (),
        exclude: Sequence[str] = (),
        lenient: bool = False,
        include_ignored: bool = False,
        policy: ReadPolicy | None = None,
        jsonl: JsonlFields | None = None,
        enrichers: Sequence[Enricher] = (),
        sweep_every: float = SWEEP_EVERY,
        backfill: bool = True,
        polling: bool = False,
        keep_marks: bool = True,
        quiet: float = QUIET,
        longest: float = LONGEST,
    ) -> None:
        options = WalkOptions(
            tuple(include), tuple(exclude), lenient, include_ignored, policy or ReadPolicy()
        )
        self.folders = [_folder(p, options) for p in paths]
        if not self.folders:
            raise InputError("nothing to watch: name at least one folder")
        self.index, self.collection = index, collection
        self.jsonl, self.enrichers = jsonl, tuple(enrichers)
        self.sweep_every, self.backfill, self.polling = sweep_every, backfill, polling
        self.queue = ChangeQueue(quiet, longest)
        self.status = WatchStatus([f.shown for f in self.folders])
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._events: Any = None
        self._lease: Any = None
        self._next_sweep = 0.0
        self._fill_after = 0.0  # monotonic time before which no vectors are filled
        self._fill_delay = 5.0
        store = index.store
        where = getattr(store, "path", None)
        self._key = (
            os.path.realpath(where) if where else f"{store.location}|{getattr(store, 'schema', '')}"
        )
        self._claimed = False
        self.start_report = IndexReport()  # what the first sweep did
        self.marks = Marks(marks_file(self._key, collection) if keep_marks else None)

    # -- lifecycle ------------------------------------------------------------------------
    def start(self, background: bool = False) -> IndexReport:
        """Take the writer lease (refused with `WriterBusy` while another process holds it),
        start listening, sweep every folder, then keep up on a thread of its own; returns
        the first sweep's report (empty with `background`: the thread sweeps first)."""
        what = f"{command_line()} (watching {', '.join(self.status.folders)})"
        self._lease = self.index.store.writer_lease(what, 0.0)
        self._lease.__enter__()
        try:
            self._claim()
            if not self.polling:
                self._events, why = native_events(
                    [f.real for f in self.folders], lambda paths, lost: self.queue.put(paths, lost)
                )
                if self._events is None:
                    log.warning("%s; polling the folder by sweeps instead", why)
                    self.status.polling(why)
            else:
                self.status.polling("asked to poll")
            self._load_marks()
            report = IndexReport() if background else self._sweep_all()
            self.start_report = report
            self._thread = threading.Thread(target=self._run, name="ragloom-watch", daemon=True)
            self._thread.start()
            self.status.running = True
        except BaseException:
            if self._events is not None:
                self._events.stop()
                self._events = None
            self._release()
            raise
        return report

    def stop(self, timeout: float = 60.0) -> None:
        """Stop listening, write what is queued, sweep once more (events the OS had not
        delivered when listening stopped are caught there: the index ends equal to the
        folders), release the lease."""
        if self._events is not None:
            self._events.stop()
            self._events = None
        self._stopping.set()
        self.queue.close()
        if self._thread is not None:
            self._thread.join(timeout)
            drained = not self._thread.is_alive()
            self._thread = None
            if drained:  # (never beside a batch still being written)
                self._guarded(self._sweep_all)
        self.status.running = False
        self.marks.close()
        self._release()

    def _claim(self) -> None:
        """One watcher per index in this process too (the lease is shared within one)."""
        with _WATCHING_LOCK:
            if self._key in _WATCHING:
                raise WriterBusy(
                    f"{self.index.store.location} is already watching {_WATCHING[self._key]}"
                    " in this process: one watcher per index",
                    "stop the other watcher first, or give it every folder to watch",
                )
            _WATCHING[self._key] = ", ".join(self.status.folders)
            self._claimed = True

    def _release(self) -> None:
        if self._claimed:
            with _WATCHING_LOCK:
                _WATCHING.pop(self._key, None)
            self._claimed = False
        if self._lease is not None:
            self._lease.__exit__(None, None, None)
            self._lease = None

    def __enter__(self) -> Watcher:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def describe(self) -> dict[str, Any]:
        """The watcher's state (what `/health` shows): folders, mode, last change, pending."""
        return self.status.to_dict(self.queue.pending(), self._pending_vectors())

    # -- the loop -------------------------------------------------------------------------
    def _run(self) -> None:
        while True:
            batch = self.queue.take(self._wait())
            if batch is not None:
                self._guarded(self._apply, batch)
            elif self._stopping.is_set():
                return
            elif time.monotonic() >= self._next_sweep:
                self._guarded(self._sweep_all)
            elif self._fill_due():
                self._guarded(self._fill_slice)

    def _wait(self) -> float:
        if self._stopping.is_set():
            return 0.0
        if self._fill_due():
            return 0.02  # a change arriving meanwhile goes first
        return max(0.0, self._next_sweep - time.monotonic())

    def _guarded(self, work: Callable[..., object], *args: Any) -> None:
        """Run one step; an unexpected failure is logged and the watcher goes on."""
        try:
            work(*args)
        except RagloomError as exc:  # the store failed, say: a sweep soon catches up
            self.status.error(exc.message)
            log.warning("%s; sweeping again in %.0f s", exc.message, RETRY_SWEEP)
            self._next_sweep = time.monotonic() + RETRY_SWEEP
        except Exception as exc:  # keep watching: the next sweep repairs what this missed
            self.status.error(f"{type(exc).__name__}: {exc}")
            log.exception("watching failed on a batch; a sweep will catch up")
            self._next_sweep = time.monotonic() + RETRY_SWEEP

    # -- batches and sweeps ---------------------------------------------------------------
    def _apply(self, batch: Batch) -> None:
        started = time.perf_counter()
        if batch.lost:
            log.warning("the OS dropped file events; sweeping to catch up")
            self.status.lost()
            self._sweep_all()
            return
        for folder in self.folders:
            sorting = sort_paths(folder, batch.paths)
            if sorting.walk:
                self._sweep(folder)
                continue
            removal: dict[str, str] = {}
            if sorting.gone:
                stored = candidates(self._stored(folder), sorting.gone)
                kept = kept_sources(sorting.found)
                plan = plan_removals(folder.real, stored, kept, folder.device, trust_empty=True)
                removal = {doc_id: stored[doc_id] for doc_id in self._held(plan)}
            marks = {f.source: mark_of(f) for f in sorting.found if f.skip is None}
            self._commit(folder, sorting.found, marks, removal, started)

    def _sweep_all(self) -> IndexReport:
        total = IndexReport()
        for folder in self.folders:
            report = self._sweep(folder)
            for name in ("documents", "unchanged", "chunks", "files", "removed", "pending"):
                setattr(total, name, getattr(total, name) + getattr(report, name))
            total.skipped += report.skipped
            total.failed += report.failed
            total.held += report.held
        return total

    def _sweep(self, folder: Folder) -> IndexReport:
        started = time.perf_counter()
        result = sweep(folder, self.marks)
        stored = self._stored(folder)
        plan = plan_removals(folder.real, stored, kept_sources(result.found), folder.device)
        removal = {doc_id: stored[doc_id] for doc_id in self._held(plan)}
        report = self._commit(folder, result.changed, result.marks, removal, started)
        report.held = plan.held
        seconds = time.perf_counter() - started
        self.status.swept(seconds)
        every = self.sweep_every
        if self.status.mode == "polling":
            every = min(every, max(POLL_AT_LEAST, POLL_SHARE * result.seconds))
        self._next_sweep = time.monotonic() + every
        return report

    def _stored(self, folder: Folder) -> dict[str, str]:
        with self.index.store.snapshot() as snap:
            if self.collection not in snap.collections():
                return {}
            return snap.file_documents_under(self.collection, folder.shown)

    def _hashes(self, files: Sequence[FoundFile]) -> dict[str, str]:
        """The content hash each file's document has now, by source (its first part's)."""
        ids = {f.id: f.source for f in files if f.skip is None and f.error is None}
        with self.index.store.snapshot() as snap:
            if self.collection not in snap.collections():
                return {}
            stored = snap.content_hashes(self.collection, list(ids))
        return {ids[doc_id]: value for doc_id, value in stored.items()}

    def _load_marks(self) -> None:
        """Take the marks kept by an earlier watcher that still match the index."""
        for folder in self.folders:
            by_source: dict[str, str] = {}
            for doc_id, source in self._stored(folder).items():
                if len(doc_id) < len(by_source.get(source, doc_id + "#")):
                    by_source[source] = doc_id  # a file's first part holds its id
            with self.index.store.snapshot() as snap:
                if self.collection not in snap.collections():
                    return
                hashes = snap.content_hashes(self.collection, list(by_source.values()))
            stored = {source: hashes.get(doc_id, "") for source, doc_id in by_source.items()}
            self.marks.load(stored)

    def _held(self, plan: MirrorOutcome) -> list[str]:
        for reason in plan.held:
            log.warning("%s", reason)
        return plan.remove

    def _commit(
        self,
        folder: Folder,
        found: list[FoundFile],
        marks: dict[str, Mark | None],
        removal: dict[str, str],
        started: float,
    ) -> IndexReport:
        """Index `found` (lexically first, reusing the vectors of `removal`: id -> source),
        then remove `removal`; remember the marks of what was read, forget those removed."""
        report = IndexReport()
        run = FileRun(found, folder.options.lenient, self.jsonl, folder.policy)
        if found:
            plan = VectorPlan(later=True, reuse_from=tuple(removal))  # the ids
            report = self.index.index_run(run, self.collection, self.enrichers, plan)
        report.removed = self.index.delete_many(list(removal), self.collection) if removal else 0
        self.marks.forget(removal.values())
        failed = {f.path for f in report.failed}
        hashes = self._hashes(run.files) if marks else {}
        self.marks.record(marks, hashes, [f.source for f in run.files if f.shown in failed])
        for failure in report.failed:
            log.warning("failed %s: %s", failure.path, failure.reason)
        if report.documents or report.removed:
            seconds = time.perf_counter() - started
            log.info(
                "indexed %d file(s), removed %d (%.0f ms)",
                report.documents,
                report.removed,
                1000 * seconds,
            )
            self.status.landed(report, seconds)
        return report

    # -- vectors after --------------------------------------------------------------------
    def _pending_vectors(self) -> int:
        try:
            return self.index.pending()
        except RagloomError:
            return 0

    def _fill_due(self) -> bool:
        return (
            self.backfill
            and not self._stopping.is_set()
            and time.monotonic() >= self._fill_after
            and self.status.may_have_pending
        )

    def _fill_slice(self) -> None:
        try:
            done = self.index.fill_pending(self.collection, limit=FILL_SLICE)
        except EmbeddingError as exc:
            self._fill_after = time.monotonic() + self._fill_delay
            log.info("vectors wait: %s; next try in %.0f s", exc.message, self._fill_delay)
            self._fill_delay = min(self._fill_delay * 2, FILL_BACKOFF)
            return
        self._fill_delay = 5.0
        if done == 0:
            self.status.may_have_pending = False


def _folder(path: str | os.PathLike[str], options: WalkOptions) -> Folder:
    try:
        return Folder(path, options)
    except FileNotFoundError:
        raise InputError(f"no such folder: {os.fspath(path)}", "check the path") from None
    except NotADirectoryError:
        raise InputError(
            f"{os.fspath(path)} is not a folder: a watcher watches folders",
            "name the folder that holds the file",
        ) from None
