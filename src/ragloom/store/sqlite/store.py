"""The embedded store: one SQLite file (WAL) plus segment files beside it
(`ragloom.store.sqlite.database`: connections, snapshots, writes, views kept in step), with
the work a writing process does in the background (`ragloom.store.sqlite.maintenance`), the
upgrade of an older file at open (`upgrade`), and check, repair and export."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ragloom.errors import StorageError, StoreError
from ragloom.store.base import Store
from ragloom.store.lease import file_lease
from ragloom.store.records import CollectionInfo, NewDocument
from ragloom.store.sql import SQLITE
from ragloom.store.sqlite import connect as connecting
from ragloom.store.sqlite.check import check_snapshot
from ragloom.store.sqlite.database import SQLiteDatabase
from ragloom.store.sqlite.export import export_collection
from ragloom.store.sqlite.maintenance import Maintenance
from ragloom.store.sqlite.repair import repair_store
from ragloom.store.sqlite.upgrade import upgrade
from ragloom.store.sqlite.write import SQLiteWrite


class SQLiteStore(SQLiteDatabase, Store):
    """An index file: snapshots to read, transactions to write, views kept in step, and
    the maintenance of a writing process."""

    def __init__(self, path: str | Path, create: bool = True, read_only: bool = False) -> None:
        super().__init__(path, create, read_only)
        if self.schema_version < connecting.SCHEMA_VERSION:
            if self.read_only:
                raise StoreError(
                    f"{self.path} uses an older index format (schema {self.schema_version})",
                    "open it once where it can be written to upgrade it",
                )
            upgrade(self)
        self.maintenance: Maintenance | None = None
        if not self.read_only:
            self.maintenance = Maintenance(self)
            self.maintenance.resume()  # work an earlier process left pending

    def close(self) -> None:
        if self.maintenance is not None:
            self.maintenance.stop()
        super().close()

    def writer_lease(self, what: str, wait: float = 0.0) -> contextlib.AbstractContextManager:
        if self.read_only:  # writes are refused anyway
            return contextlib.nullcontext()
        lock = self.path.with_name(f".{self.path.name}-writer.lock")  # hidden: never indexed
        return file_lease(str(lock), self.path.name, what, wait)

    def written(self, write: SQLiteWrite) -> None:
        if write.changes and self.maintenance is not None:
            self.maintenance.nudge()

    # -- helpers the engine uses ------------------------------------------------------
    def pending(self, collection: CollectionInfo, limit: int) -> list[tuple[int, str | None, str]]:
        with self.snapshot() as snap:
            view = snap.collection(collection.name).view
            rows: list[int] = []
            for part in view.parts:
                missing = ~part.has_vector(view.epoch)
                if part.dead is not None:
                    missing &= ~part.dead
                rows.extend(part.segment.rows[missing][: limit - len(rows)].tolist())
                if len(rows) >= limit:
                    break
            if not rows:
                return []
            records = SQLITE.rows_in(
                snap.conn,
                "SELECT c.id, d.title, c.text FROM chunks c"
                " JOIN documents d ON d.id = c.document_id WHERE c.id {keys} ORDER BY c.id",
                [],
                rows,
            )
            return [(int(r), t, x) for r, t, x in records]

    def chunk_texts(self, collection: CollectionInfo) -> list[tuple[int, str | None, str]]:
        with self.snapshot() as snap:
            return snap.chunk_texts(collection)

    def export(self, collection: str, batch: int = 200) -> Iterator[list[NewDocument]]:
        with self.snapshot() as snap:
            yield from export_collection(snap, collection, batch)

    def check(self) -> list[str]:
        with self.snapshot() as snap:
            return check_snapshot(snap)

    def repair(self) -> list[str]:
        if self.maintenance is None:
            raise StorageError(f"{self.path} is open for search only; it cannot be repaired")
        return repair_store(self, self.maintenance)

    def busy(self) -> contextlib.AbstractContextManager:
        if self.maintenance is None:
            return contextlib.nullcontext()
        return self.maintenance.writing()

    def maintain(self, wait: bool = True, on_step: Any = None) -> int:
        if self.maintenance is None:
            return 0
        return self.maintenance.run_now(on_step)

    def finish(self, on_step: Any = None) -> int:
        if self.maintenance is None:
            return 0
        return self.maintenance.finish(on_step)

    def config_json(self, collection_id: int) -> dict[str, Any]:
        with self.snapshot() as snap:
            for row in snap.rows.values():
                if row.id == collection_id:
                    return json.loads(row.config_json)
        raise StoreError(f"no collection {collection_id}")
