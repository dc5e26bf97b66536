"""What a server instance is configured with: index file, readable roots, token, body limit."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ragloom.errors import InputError
from ragloom.store.open import is_url

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8181
DEFAULT_MAX_BODY = 10 * 1024 * 1024  # 10 MB


@dataclass(frozen=True)
class ServerSettings:
    """Immutable configuration of one `ragloom serve` process."""

    index_path: Path | str  # an index file or a database URL
    roots: tuple[Path, ...] = ()
    token: str | None = None
    max_body: int = DEFAULT_MAX_BODY
    embedder: str | None = "auto"  # as `Index(embedder=...)`: auto, none, local, openai:...

    @classmethod
    def build(
        cls,
        index_path: str | Path,
        roots: Sequence[str | Path] = (),
        token: str | None = None,
        max_body: int = DEFAULT_MAX_BODY,
        embedder: str | None = "auto",
    ) -> ServerSettings:
        """Validate and normalise: roots become real (symlink-free) folder paths."""
        real_roots = []
        for root in roots:
            real = Path(os.path.realpath(root))
            if not real.is_dir():
                raise InputError(f"--root {root} is not an existing folder")
            real_roots.append(real)
        if max_body < 1:
            raise InputError(f"--max-body must be positive, got {max_body}")
        roots_found = tuple(dict.fromkeys(real_roots))
        where = index_path if is_url(index_path) else Path(index_path)
        return cls(where, roots_found, token or None, max_body, embedder)
