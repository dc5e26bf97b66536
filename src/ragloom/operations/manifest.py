"""A backup's manifest (`ragloom-backup.json`): what it holds (store kind, the version it
copied, its collections) and a checksum of every file, so restoring finds a damaged or
incomplete backup before it writes anything."""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from ragloom.errors import InputError
from ragloom.version import __version__

MANIFEST = "ragloom-backup.json"
FORMAT = 1
CHUNK = 1 << 20


@dataclass
class Manifest:
    """What one backup holds."""

    store: str  # "sqlite" or "postgresql"
    generation: int  # the committed version it copied
    source: str  # where it came from (a path, or a URL without its password)
    collections: dict[str, dict[str, int]] = field(default_factory=dict)
    files: dict[str, dict[str, Any]] = field(default_factory=dict)  # relative path -> size, sha256
    details: dict[str, Any] = field(default_factory=dict)  # store-specific (schema version, ...)
    created: float = field(default_factory=time.time)
    ragloom: str = __version__
    format: int = FORMAT

    def write(self, folder: Path) -> None:
        (folder / MANIFEST).write_text(json.dumps(asdict(self), indent=1, sort_keys=True) + "\n")

    @classmethod
    def read(cls, folder: Path) -> Manifest:
        path = Path(folder) / MANIFEST
        if not path.is_file():
            raise InputError(
                f"{folder} is not a ragloom backup (no {MANIFEST})",
                "give a folder that `ragloom backup DEST` wrote",
            )
        try:
            data = json.loads(path.read_text())
            manifest = cls(**data)
        except (ValueError, TypeError) as exc:
            raise InputError(f"{path} is damaged ({exc})", "restore from another backup") from None
        if manifest.format > FORMAT:
            raise InputError(
                f"{folder} was written by a newer ragloom (backup format {manifest.format})",
                "restore it with that version, or upgrade ragloom",
            )
        return manifest

    def verify(self, folder: Path) -> None:
        """Every file is there, complete and unchanged; else an error naming the first."""
        for name, expected in sorted(self.files.items()):
            path = Path(folder) / name
            if not path.is_file():
                raise InputError(
                    f"backup {folder} is incomplete: {name} is missing", "use another backup"
                )
            size, digest = file_digest(path)
            if size != expected["bytes"] or digest != expected["sha256"]:
                raise InputError(
                    f"backup {folder} is damaged: {name} differs from its checksum",
                    "use another backup",
                )


class HashingWriter:
    """A file being written, with its size and SHA-256 kept as it goes."""

    def __init__(self, handle: BinaryIO) -> None:
        self.handle = handle
        self.hash = hashlib.sha256()
        self.size = 0

    def write(self, data: bytes | memoryview) -> int:
        self.hash.update(data)
        self.size += len(data)
        return self.handle.write(data)

    def entry(self) -> dict[str, Any]:
        return {"bytes": self.size, "sha256": self.hash.hexdigest()}


def copy_hashing(source: BinaryIO, target: Path) -> dict[str, Any]:
    """Copy an open file to `target`; its size and checksum."""
    with open(target, "wb") as handle:
        writer = HashingWriter(handle)
        while data := source.read(CHUNK):
            writer.write(data)
    return writer.entry()


def file_digest(path: Path) -> tuple[int, str]:
    digest = hashlib.sha256()
    size = 0
    with open(path, "rb") as handle:
        while data := handle.read(CHUNK):
            digest.update(data)
            size += len(data)
    return size, digest.hexdigest()
