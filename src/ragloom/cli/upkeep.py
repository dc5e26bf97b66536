"""`ragloom stats`, `delete`, `reembed` and `check`: looking after an index."""

from __future__ import annotations

import sys
from typing import Any

import click
from rich.markup import escape

from ragloom.cli.common import collection_option, open_index, where_options
from ragloom.console import out, print_json
from ragloom.console_widgets import print_table
from ragloom.index import Index


def _note(part: dict[str, Any]) -> str:
    """The note column of a database server or shard: empty, or why it did not answer."""
    return "" if part["reachable"] else escape(part.get("error", "unreachable"))


def _server_row(server: dict[str, Any]) -> tuple[str, ...]:
    """A database server's row of `stats`: its role and how far it lags behind."""
    return (
        server["host"],
        server.get("role", "-"),
        str(server.get("lag_bytes", "-")),
        str(server.get("last_replay_seconds_ago", "-")),
        _note(server),
    )


def _shard_row(shard: dict[str, Any]) -> tuple[str, ...]:
    """A shard's row of `stats`: its documents and chunks summed over its collections."""
    held = shard.get("collections", {}).values()
    reachable = shard["reachable"]
    return (
        str(shard["shard"]),
        escape(shard["location"]),
        str(sum(c["documents"] for c in held)) if reachable else "-",
        str(sum(c["chunks"] for c in held)) if reachable else "-",
        _note(shard),
    )


@click.command()
@where_options
@click.option("--json", "as_json", is_flag=True)
@click.option("--documents", "list_documents", is_flag=True, help="Also list documents.")
@click.pass_context
def stats(ctx: click.Context, as_json: bool, list_documents: bool) -> None:
    """Show what the index holds."""
    with open_index(ctx) as index:
        data = index.stats()
        docs = index.documents(limit=10_000) if list_documents else []
    if as_json:
        if list_documents:
            data["document_list"] = [
                {"id": d.doc_id, "collection": d.collection, "source": d.source, "chunks": d.chunks}
                for d in docs
            ]
        print_json({"ok": True, **data})
        return
    counts = ("documents", "chunks", "vectors", "pending", "terms")
    print_table(
        f"ragloom index {data['path']}",
        ("collection", *counts, "avg terms/chunk"),
        (
            (name, *(str(c[k]) for k in counts), str(c["avg_chunk_terms"]))
            for name, c in data["collections"].items()
        ),
    )
    if "replicas" in data:
        print_table(
            "database servers",
            ("host", "role", "replay lag (bytes)", "last replay (s ago)", "note"),
            (_server_row(server) for server in data["replicas"]),
        )
    if "shards" in data:
        print_table(
            "shards",
            ("shard", "location", "documents", "chunks", "note"),
            (_shard_row(shard) for shard in data["shards"]),
        )
    for d in docs:
        out.print(f"{d.collection}  {d.doc_id}  ({d.chunks} chunks)  {d.source or ''}")


@click.command()
@where_options
@click.argument("doc_id")
@collection_option
@click.pass_context
def delete(ctx: click.Context, doc_id: str, collection: str) -> None:
    """Delete a document and all of its chunks."""
    with open_index(ctx) as index:
        removed = index.delete(doc_id, collection)
    out.print(f"deleted {doc_id} ({removed} chunk(s))")


@click.command()
@where_options
@collection_option
@click.option(
    "--pending",
    is_flag=True,
    help="Only embed chunks still waiting for vectors (the service was down when indexed).",
)
@click.pass_context
def reembed(ctx: click.Context, collection: str, pending: bool) -> None:
    """Replace a collection's vectors with the --embedder model's (or add them)."""
    spec = ctx.obj["embedder"]
    if pending:
        with Index(ctx.obj["index_path"], create=False, embedder=spec) as index:
            count = index.fill_pending(collection)
        out.print(f"embedded {count} pending chunk(s) of {collection}")
        return
    with Index(ctx.obj["index_path"], create=False, embedder=None) as index:
        count = index.reembed(collection, "local" if spec == "auto" else spec)
    out.print(f"embedded {count} chunk(s) of {collection}")


@click.command()
@where_options
@click.option("--json", "as_json", is_flag=True, help="Print the problems as JSON.")
@click.option(
    "--repair",
    is_flag=True,
    help="Write a new index from everything readable (segments and graphs rebuilt from the "
    "rows) and list what was lost; the checked index is not changed.",
)
@click.option("--output", help="Where --repair writes (default: NAME.repaired.db beside it).")
@click.pass_context
def check(ctx: click.Context, as_json: bool, repair: bool, output: str | None) -> None:
    """Verify the index: SQLite integrity, and that documents, chunks, postings, statistics
    and vectors agree; a damaged file is read page by page to say what is damaged. Exits 1
    when anything is wrong."""
    from ragloom.operations.salvage import check_index, repair_index
    from ragloom.operations.salvage.check import REPAIR_HINT

    where, repaired = ctx.obj["index_path"], None
    if repair:
        model = ctx.obj["embedder"]  # lost vectors come from each collection's own model
        report, repaired = repair_index(where, output, "auto" if model == "none" else model)
    else:
        report = check_index(where)
    if as_json:
        print_json({**report.to_dict(), "repaired": repaired.__dict__ if repaired else None})
    else:
        for problem in report.problems:
            out.print(f"problem: {problem}", markup=False, highlight=False)
        if report.ok:
            out.print("ok: documents, chunks, postings, statistics and vectors agree")
        if repaired:
            _print_repair(repaired)
        elif report.salvage is not None:
            click.echo(f"hint: {REPAIR_HINT}", err=True)
    if not report.ok:
        sys.exit(1)


def _print_repair(repaired: Any) -> None:
    out.print(
        f"repaired: wrote {repaired.output} with {repaired.documents} documents "
        f"({repaired.chunks} chunks; {repaired.embedded} embedded again, {repaired.pending} "
        "waiting for vectors)",
        markup=False,
    )
    for collection, doc_id in repaired.lost:
        out.print(f"lost: {collection} {doc_id}", markup=False, highlight=False)
    out.print(f"use it with --index {repaired.output}", markup=False)
