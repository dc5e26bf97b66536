"""`ragloom serve` (the HTTP sidecar) and `ragloom mcp` (the tools over MCP, stdio)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from ragloom.cli.common import (
    collection_option,
    max_file_size_option,
    open_index,
    stack,
    where_options,
)
from ragloom.server.runner import serve as run_server
from ragloom.server.settings import ServerSettings


def _folders(flag: str, dest: str, help: str) -> Callable[[Any], Any]:
    """A repeatable option naming existing folders, gathered into the parameter `dest`."""
    return click.option(
        flag, dest, multiple=True, type=click.Path(exists=True, file_okay=False), help=help
    )


def _seconds(flag: str, default: float, help: str) -> Callable[[Any], Any]:
    """An option giving a time limit: a positive number of seconds."""
    return click.option(
        flag,
        type=click.FloatRange(min=0, min_open=True),
        default=default,
        show_default=True,
        help=help,
    )


SERVE_OPTIONS = stack(
    click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind."),
    click.option(
        "--port",
        envvar="RAGLOOM_PORT",
        default=8181,
        show_default=True,
        type=click.IntRange(0, 65535),
        help="Port (env RAGLOOM_PORT).",
    ),
    _folders(
        "--root",
        "roots",
        "Folder whose files POST /index may read (repeatable; none: path indexing off).",
    ),
    _folders(
        "--watch",
        "watched",
        "Folder to keep the index equal to (repeatable; a --root too; docs/watching.md).",
    ),
    click.option(
        "--token", envvar="RAGLOOM_TOKEN", help="Bearer token required (env RAGLOOM_TOKEN)."
    ),
    click.option(
        "--max-body",
        default=10 * 1024 * 1024,
        show_default=True,
        type=click.IntRange(min=1),
        help="Largest request body in bytes.",
    ),
    click.option(
        "--allow-host",
        "allowed_hosts",
        multiple=True,
        help="Another Host name to answer for besides loopback and --host (repeatable; '*': any).",
    ),
    click.option(
        "--allow-hardlinks",
        is_flag=True,
        help="Index files that have other hard links (refused by default: "
        "docs/untrusted-input.md).",
    ),
    max_file_size_option("Largest file /index reads (0: no limit)."),
    _seconds("--read-timeout", 30.0, "Seconds to read one file."),
    _seconds("--index-timeout", 600.0, "Seconds one /index request may run before it is stopped."),
    click.option("--access-log", is_flag=True, help="Log every request."),
    click.option(
        "--rerank",
        "reranker",
        envvar="RAGLOOM_RERANKER",
        metavar="SPEC",
        help="The reranker /query's rerank=true uses (env RAGLOOM_RERANKER): onnx:FOLDER, "
        "rerank:MODEL@URL, tei:MODEL@URL, llm.",
    ),
)


@click.command()
@where_options
@SERVE_OPTIONS
@click.pass_context
def serve(
    ctx: click.Context,
    host: str,
    port: int,
    roots: tuple[str, ...],
    watched: tuple[str, ...],
    token: str | None,
    max_body: int,
    allowed_hosts: tuple[str, ...],
    allow_hardlinks: bool,
    max_file_size: int,
    read_timeout: float,
    index_timeout: float,
    access_log: bool,
    reranker: str | None,
) -> None:
    """Run the HTTP sidecar (JSON API, OpenAPI at /openapi.json)."""
    embedder = ctx.obj.get("embedder", "auto")
    settings = ServerSettings.build(
        ctx.obj["index_path"],
        roots,
        token,
        max_body,
        embedder,
        host=host,
        allowed_hosts=allowed_hosts,
        allow_hardlinks=allow_hardlinks,
        max_file_size=max_file_size,
        read_timeout=read_timeout,
        index_timeout=index_timeout,
        llm=ctx.obj["llm"],
        reranker=reranker,
        watch=watched,
    )
    run_server(settings, host=host, port=port, access_log=access_log)


@click.command()
@collection_option
@click.option(
    "--rerank",
    metavar="SPEC",
    help="Rerank every tool search with this reranker (onnx:FOLDER, tei:MODEL@URL, ...).",
)
@click.pass_context
def mcp(ctx: click.Context, collection: str, rerank: str | None) -> None:
    """Serve search, get_document and context as MCP tools over stdio."""
    from ragloom.mcp_server import serve_stdio
    from ragloom.tools import Toolbox

    defaults: dict[str, Any] = {"collection": collection}
    if rerank:
        defaults["rerank"] = rerank
    with open_index(ctx) as index:
        serve_stdio(Toolbox(index, **defaults))
