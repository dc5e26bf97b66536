"""Turn paths into Documents: discovery, decoding, JSONL records."""

from ragloom.loading.files import (
    SUPPORTED_SUFFIXES,
    FoundFile,
    LoadedFile,
    discover_files,
    document_id_for,
    load_file,
)
from ragloom.loading.jsonl import JsonlFields, read_jsonl

__all__ = [
    "SUPPORTED_SUFFIXES",
    "JsonlFields",
    "FoundFile",
    "LoadedFile",
    "discover_files",
    "document_id_for",
    "load_file",
    "read_jsonl",
]
