"""Open a store from a location: a file path (the embedded SQLite store) or a database URL.

Backends register themselves by URL scheme in `BACKENDS`, so the engine never imports a
database driver it does not use.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ragloom.errors import InputError
from ragloom.store.base import Store

Opener = Callable[..., Store]
BACKENDS: dict[str, str] = {  # URL scheme -> "module:function" opening such a store
    "postgresql": "ragloom.store.postgres:open_postgres",
    "postgres": "ragloom.store.postgres:open_postgres",
    "postgresql+shards": "ragloom.store.shards:open_shards",
    "postgres+shards": "ragloom.store.shards:open_shards",
}


def is_url(location: str | Path) -> bool:
    return isinstance(location, str) and "://" in location


def location_label(location: str | Path) -> str:
    """What a status page may show of a store's location: a file's name, or a URL without
    its password and query (which may carry one)."""
    if not is_url(location):
        return Path(location).name
    from urllib.parse import urlsplit

    parts = urlsplit(str(location))  # netloc kept whole: libpq URLs may list several hosts
    userinfo, _, hosts = parts.netloc.rpartition("@")
    user = userinfo.split(":", 1)[0]
    return f"{parts.scheme}://{f'{user}@' if user else ''}{hosts}{parts.path}"


def open_store(location: str | Path, create: bool = True, read_only: bool = False) -> Store:
    """The store at `location`: `postgresql://...` and other registered URLs, else a file."""
    if is_url(location):
        scheme = str(location).split("://", 1)[0].lower()
        target = BACKENDS.get(scheme)
        if target is None:
            raise InputError(
                f"no store for {scheme}:// URLs",
                f"use a file path{' or ' if BACKENDS else ''}"
                + ", ".join(f"{s}://" for s in sorted(BACKENDS)),
            )
        module, _, function = target.partition(":")
        import importlib

        try:
            opener: Opener = getattr(importlib.import_module(module), function)
        except ImportError as exc:
            raise InputError(
                f"the {scheme}:// store needs a package that is not installed ({exc.name})",
                "pip install 'ragloom[postgres]'",
            ) from None
        return opener(str(location), create=create, read_only=read_only)
    from ragloom.store.sqlite import SQLiteStore

    return SQLiteStore(location, create=create, read_only=read_only)
