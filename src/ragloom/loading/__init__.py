"""Turn paths into Documents: discovery, decoding, JSONL records."""

from ragloom.loading.files import (
    SUPPORTED_SUFFIXES,
    FoundFile,
    LoadedFile,
    discover_files,
    document_id_for,
    load_file,
)
from ragloom.loading.jsonl import JsonlFields, decoded_lines, read_jsonl, read_jsonl_file

__all__ = [
    "SUPPORTED_SUFFIXES",
    "JsonlFields",
    "FoundFile",
    "LoadedFile",
    "discover_files",
    "document_id_for",
    "load_file",
    "decoded_lines",
    "read_jsonl",
    "read_jsonl_file",
]
