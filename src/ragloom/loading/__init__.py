"""Turn paths into Documents: discovery, safe opening, decoding, JSONL records, runs."""

from ragloom.loading.files import (
    FoundFile,
    LoadedFile,
    discover_files,
    document_id_for,
    load_file,
)
from ragloom.loading.jsonl import JsonlFields, decoded_lines, read_jsonl, read_jsonl_file
from ragloom.loading.kinds import SUPPORTED_SUFFIXES
from ragloom.loading.opening import DEFAULT_MAX_FILE_SIZE, ReadPolicy
from ragloom.loading.run import FileFailure, FileRun, StopSignal, index_files

__all__ = [
    "DEFAULT_MAX_FILE_SIZE",
    "SUPPORTED_SUFFIXES",
    "FileFailure",
    "FileRun",
    "FoundFile",
    "JsonlFields",
    "LoadedFile",
    "ReadPolicy",
    "StopSignal",
    "decoded_lines",
    "discover_files",
    "document_id_for",
    "index_files",
    "load_file",
    "read_jsonl",
    "read_jsonl_file",
]
