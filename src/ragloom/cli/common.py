"""What the commands share: opening the index, --collection, --index/--embedder after the
command, sizes (--max-file-size), KEY=VALUE pairs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from ragloom.command_options import embedder_after, index_after
from ragloom.index import DEFAULT_COLLECTION, Index


def open_index(ctx: click.Context, create: bool = False) -> Index:
    return Index(
        ctx.obj["index_path"], create=create, embedder=ctx.obj["embedder"], llm=ctx.obj["llm"]
    )


class ByteSize(click.ParamType):
    """A size in bytes: `1000`, `64K`, `256M`, `2G` (powers of 1024); 0 means no limit."""

    name = "size"
    _UNITS = {"": 1, "B": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        text = str(value).strip().upper().removesuffix("IB").removesuffix("B")
        number, unit = text.rstrip("KMGT"), text[len(text.rstrip("KMGT")) :]
        try:
            size = float(number) * self._UNITS[unit]
        except (ValueError, KeyError):
            self.fail(f"{value!r} is not a size (e.g. 1000, 64K, 256M, 2G)", param, ctx)
        if size < 0:
            self.fail("a size cannot be negative", param, ctx)
        return int(size)


def max_file_size_option(help: str) -> Callable[[Any], Any]:
    """`--max-file-size`, a `ByteSize` that defaults to the loader's own limit; `help` says
    which files it bounds (`index` and `serve` both take it). The loader is imported here, by
    the commands that read files: a search never imports it (0.1 s of a one-shot search)."""
    from ragloom.loading import DEFAULT_MAX_FILE_SIZE

    return click.option(
        "--max-file-size",
        type=ByteSize(),
        default=str(DEFAULT_MAX_FILE_SIZE // 2**20) + "M",
        show_default=True,
        help=help,
    )


def _collection(ctx: click.Context, param: click.Parameter, value: str | None) -> str:
    """A command's --collection, else the one given before the command, else "default"."""
    return value or (ctx.obj or {}).get("collection") or DEFAULT_COLLECTION


collection_option = click.option(
    "--collection",
    "-c",
    default=None,
    callback=_collection,
    help=f"Collection name (default: {DEFAULT_COLLECTION}; also accepted before the command).",
)


def where_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """`--index` and `--embedder` after the command too (`ragloom serve --index x.db`)."""
    return index_after(embedder_after(command))


def pairs(values: tuple[str, ...], name: str, cast: Callable[[str], Any]) -> dict[str, Any]:
    out = {}
    for item in values:
        key, sep, raw = item.partition("=")
        try:
            if not sep or not key:
                raise ValueError
            out[key] = cast(raw)
        except ValueError:
            raise click.BadParameter(f"expected KEY=VALUE, got {item!r}", param_hint=name) from None
    return out


def stack(*decorators: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """Several option decorators as one, applied in the order written (the first is the
    first option in --help), so a command's long option list can live beside it."""

    def apply(command: Any) -> Any:
        for decorator in reversed(decorators):
            command = decorator(command)
        return command

    return apply
