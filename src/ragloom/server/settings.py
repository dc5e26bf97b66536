"""What a server instance is configured with: index file, readable roots, token, limits."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragloom.errors import InputError
from ragloom.loading import DEFAULT_MAX_FILE_SIZE, ReadPolicy
from ragloom.store.open import is_url

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8181
DEFAULT_MAX_BODY = 10 * 1024 * 1024  # 10 MB
DEFAULT_READ_TIMEOUT = 30.0  # seconds to read one file
DEFAULT_INDEX_TIMEOUT = 600.0  # seconds one /index request may run


@dataclass(frozen=True)
class ServerSettings:
    """Immutable configuration of one `ragloom serve` process."""

    index_path: Path | str  # an index file or a database URL
    roots: tuple[Path, ...] = ()
    token: str | None = None
    max_body: int = DEFAULT_MAX_BODY
    embedder: str | None = "auto"  # as `Index(embedder=...)`: auto, none, local, openai:...
    host: str = DEFAULT_HOST  # the bound address: accepted as a Host header too
    allowed_hosts: tuple[str, ...] = ()  # more Host names to accept ("*": any)
    allow_hardlinks: bool = False
    max_file_size: int = DEFAULT_MAX_FILE_SIZE
    read_timeout: float = DEFAULT_READ_TIMEOUT
    index_timeout: float = DEFAULT_INDEX_TIMEOUT
    llm: str | None = None  # as `Index(llm=...)`: openai:MODEL@URL, ollama:...; $RAGLOOM_LLM
    reranker: str | None = None  # as `Index(reranker=...)`: onnx:FOLDER, tei:..., llm, ...
    watch: tuple[Path, ...] = ()  # folders kept equal to the index (roots too)

    @classmethod
    def build(
        cls,
        index_path: str | Path,
        roots: Sequence[str | Path] = (),
        token: str | None = None,
        max_body: int = DEFAULT_MAX_BODY,
        embedder: str | None = "auto",
        llm: str | None = None,
        reranker: str | None = None,
        watch: Sequence[str | Path] = (),
        **limits: object,
    ) -> ServerSettings:
        """Validate and normalise: roots become real (symlink-free) folder paths; a watched
        folder is a root too.

        `limits` are the other fields (host, allowed_hosts, allow_hardlinks, max_file_size,
        read_timeout, index_timeout).
        """
        real_roots: list[Path] = []
        watched: list[Path] = []
        for flag, folders, into in (("--root", roots, real_roots), ("--watch", watch, watched)):
            for folder in folders:
                real = Path(os.path.realpath(folder))
                if not real.is_dir():
                    raise InputError(f"{flag} {folder} is not an existing folder")
                into.append(real)
        real_roots += [w for w in watched if not any(w.is_relative_to(r) for r in real_roots)]
        if max_body < 1:
            raise InputError(f"--max-body must be positive, got {max_body}")
        for name in ("read_timeout", "index_timeout"):
            value = limits.get(name)
            if value is not None and not (isinstance(value, (int, float)) and value > 0):
                raise InputError(f"--{name.replace('_', '-')} must be a positive number of seconds")
        size = limits.get("max_file_size")
        if size is not None and not (isinstance(size, int) and size >= 0):
            raise InputError("--max-file-size must be 0 (no limit) or a positive size")
        allowed: Any = limits.pop("allowed_hosts", ()) or ()
        hosts = tuple(str(h).strip().lower() for h in allowed)
        roots_found = tuple(dict.fromkeys(real_roots))
        if llm:
            from ragloom.llm.client import check_llm_spec

            check_llm_spec(llm)
        where = index_path if is_url(index_path) else Path(index_path)
        return cls(
            where,
            roots_found,
            token or None,
            max_body,
            embedder,
            llm=llm,
            reranker=reranker,
            watch=tuple(dict.fromkeys(watched)),
            allowed_hosts=hosts,
            **{k: v for k, v in limits.items() if v is not None},  # type: ignore[arg-type]
        )

    @property
    def read_policy(self) -> ReadPolicy:
        """How `/index` reads files: under the roots, within the size and time limits."""
        return ReadPolicy(self.roots, self.allow_hardlinks, self.max_file_size, self.read_timeout)
