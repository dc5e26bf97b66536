"""Salvage of a damaged embedded index: `ragloom check` reports what is damaged (pages,
collections, documents, segment files) from a read-only page scan when SQLite itself cannot
read the file; `ragloom check --repair` writes a new index from everything readable. The
damaged file is never written to."""

from ragloom.operations.salvage.assess import Salvage, assess
from ragloom.operations.salvage.check import CheckReport, check_index, repair_index
from ragloom.operations.salvage.rebuild import RepairReport, rebuild

__all__ = [
    "CheckReport",
    "RepairReport",
    "Salvage",
    "assess",
    "check_index",
    "rebuild",
    "repair_index",
]
