"""`check --repair`: a new index from what a damaged one still holds. Each whole document is
indexed again with its collection's own settings (so the result is a clean build of the
recovered documents: segments and graphs made afresh), reusing every vector that could be
read (handed to indexing through the new index's vector cache); the rest are embedded again,
or wait as pending when the model is not at hand. The damaged index is only read."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragloom.index import Index
from ragloom.operations.salvage.assess import Salvage, SalvagedCollection
from ragloom.operations.sqlite_backup import DATABASE, SEGMENTS, place_index
from ragloom.operations.staging import refuse_existing, scratch_beside

BATCH = 500
HINT = "give --output a new path: a repair never writes over an index"


@dataclass
class RepairReport:
    output: str
    documents: int = 0
    chunks: int = 0
    embedded: int = 0  # chunks whose vector was lost and computed again
    pending: int = 0  # chunks left waiting for a vector
    lost: list[tuple[str, str]] = field(default_factory=list)  # (collection, document id)


def rebuild(salvage: Salvage, output: Path, embedder: Any = "auto") -> RepairReport:
    """Write the salvaged documents as a new index at `output` (and its segment folder)."""
    output = Path(output).absolute()
    report = RepairReport(str(output), lost=salvage.lost_documents())
    refuse_existing(output, "a repair", HINT)
    with scratch_beside(output) as folder:
        with Index(folder / DATABASE, create=True, embedder=embedder) as index:
            for collection in salvage.collections.values():
                _collection(index, collection, report)
            index.optimize()
            index.repair()  # search graphs of large segments, now rather than later
        place_index(folder / DATABASE, folder / SEGMENTS, output, move=True)
    return report


def _collection(index: Any, salvaged: SalvagedCollection, report: RepairReport) -> None:
    store = index.store
    with store.write() as write:
        if salvaged.config is not None:
            made = write.ensure_collection(salvaged.name, salvaged.config)
            write.set_config(made, salvaged.config)
        model = ((salvaged.config or {}).get("embedding") or {}).get("model")
        if model and salvaged.vectors:
            write.conn.executemany(
                "INSERT OR REPLACE INTO vector_cache (model, text_hash, vector) VALUES (?, ?, ?)",
                [(model, h, v.astype("<f4").tobytes()) for h, v in salvaged.vectors.items()],
            )
    documents = salvaged.documents
    for start in range(0, len(documents), BATCH):
        outcome = index.add(documents[start : start + BATCH], collection=salvaged.name)
        report.documents += outcome.documents
        report.chunks += outcome.chunks
        report.embedded += outcome.embedded
        report.pending += outcome.pending
