"""Command-line options shared by the `ragloom` commands wherever they are defined (the main
group in `ragloom.cli`, `eval` and `tune` in `ragloom.evaluation.commands`): `--index` and
`--embedder` accepted after the command too, overriding the value given before it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from ragloom.embedding.resolve import check_spec


def _store(key: str) -> Callable[[click.Context, click.Parameter, str | None], None]:
    """Option callback: a value given after the command overrides the one given before."""

    def store(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
        if value is not None:
            if key == "embedder":
                check_spec(value)
            ctx.ensure_object(dict)[key] = value

    return store


def _after(name: str, key: str, what: str) -> Callable[[Callable[..., Any]], Any]:
    """An option also accepted after the command, overriding the one given before it."""
    return click.option(
        name, default=None, expose_value=False, callback=_store(key), help=f"{what} (as before)."
    )


embedder_after = _after("--embedder", "embedder", "Embedding model")
index_after = _after("--index", "index_path", "Index file")
