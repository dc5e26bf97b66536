"""Segment files: named numpy arrays behind a JSON header, read back memory-mapped.

Layout: 8-byte magic, 8-byte header length, the UTF-8 JSON header (array names, dtypes,
shapes, offsets, and free-form `info`), then each array's bytes at a 64-byte aligned offset.
A file is written under a temporary name, flushed to disk and renamed into place, so a
reader (or a crash) never sees half a file. Opening maps the file read-only: nothing is
read until a search touches it, and the pages are shared by every process using the index.
"""

from __future__ import annotations

import json
import mmap
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

MAGIC = b"RGLMSEG1"
ALIGN = 64


def _pad(length: int) -> int:
    return (-length) % ALIGN


@dataclass(frozen=True)
class Blocks:
    """An array too large to hold in memory, given as its dtype, shape and row blocks in
    order (written as they come: merging a million vectors never holds them all)."""

    dtype: np.dtype
    shape: tuple[int, ...]
    blocks: Iterable[np.ndarray]

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape)) * np.dtype(self.dtype).itemsize


def write_arrays(
    path: Path, arrays: Mapping[str, np.ndarray | Blocks], info: Mapping[str, Any]
) -> int:
    """Write `arrays` and `info` to `path` atomically and durably; returns the file's size."""
    entries = {}
    offset = 0
    for name, array in arrays.items():
        if not isinstance(array, Blocks):
            array = np.ascontiguousarray(array)
        dtype = np.dtype(array.dtype)
        entries[name] = {"dtype": dtype.str, "shape": list(array.shape), "offset": offset}
        offset += array.nbytes + _pad(array.nbytes)
    header = json.dumps({"arrays": entries, "info": info}, ensure_ascii=False).encode("utf-8")
    start = len(MAGIC) + 8 + len(header)
    start += _pad(start)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as handle:
        handle.write(MAGIC + len(header).to_bytes(8, "little") + header)
        handle.write(b"\0" * (start - handle.tell()))
        for array in arrays.values():
            pieces = array.blocks if isinstance(array, Blocks) else [array]
            written = 0
            for piece in pieces:
                data = np.ascontiguousarray(piece, dtype=array.dtype)
                if data.nbytes:
                    handle.write(data.data.cast("B"))
                written += data.nbytes
            if written != array.nbytes:
                raise ValueError(f"{path}: wrote {written} bytes of a {array.nbytes}-byte array")
            handle.write(b"\0" * _pad(written))
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    fsync_folder(path.parent)
    return start + offset


def fsync_folder(folder: Path) -> None:
    """Flush a folder's entries to disk (a file renamed into it survives a crash); where the
    system cannot open or sync a folder, nothing is done."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class ArrayFile:
    """A segment file mapped read-only: `arrays` are views into the mapping."""

    def __init__(self, path: Path) -> None:
        self.path = path
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size < len(MAGIC) + 8:
                raise ValueError(f"{path} is truncated")
            self._map = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        if self._map[: len(MAGIC)] != MAGIC:
            raise ValueError(f"{path} is not a ragloom segment file")
        length = int.from_bytes(self._map[len(MAGIC) : len(MAGIC) + 8], "little")
        begin = len(MAGIC) + 8
        if begin + length > size:
            raise ValueError(f"{path} is truncated")
        header = json.loads(bytes(self._map[begin : begin + length]).decode("utf-8"))
        start = begin + length
        start += _pad(start)
        self.info: dict[str, Any] = header["info"]
        self.arrays: dict[str, np.ndarray] = {}
        for name, entry in header["arrays"].items():
            dtype = np.dtype(entry["dtype"])
            shape = tuple(entry["shape"])
            count = int(np.prod(shape)) if shape else 1
            at = start + int(entry["offset"])
            if at + count * dtype.itemsize > size:
                raise ValueError(f"{path} is truncated")
            array = np.frombuffer(self._map, dtype, count, at).reshape(shape)
            self.arrays[name] = array

    @property
    def size(self) -> int:
        return len(self._map)
