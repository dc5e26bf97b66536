"""`ragloom backup`, `restore`, `export`, `import`, `migrate` and `add-shard`: whole-index
operations."""

from __future__ import annotations

import json
from collections.abc import Callable

import click

from ragloom.cli.common import where_options
from ragloom.console import err, out, print_json
from ragloom.console_widgets import progress


def _stepper(update: Callable[[int, int], None]) -> Callable[[str, int, int], None]:
    return lambda _what, done, total: update(done, total)


@click.command("backup")
@where_options
@click.argument("dest")
@click.option("--json", "as_json", is_flag=True, help="Print the backup's manifest as JSON.")
@click.pass_context
def backup_cmd(ctx: click.Context, dest: str, as_json: bool) -> None:
    """Copy the index, live, into the new folder DEST: one committed version, taken while
    writes go on (PostgreSQL: a logical copy of ragloom's schema)."""
    from ragloom.operations import backup

    with progress("backup") as update:
        manifest = backup(ctx.obj["index_path"], dest, _stepper(update))
    if as_json:
        print_json({"ok": True, "backup": dest, **manifest.__dict__})
        return
    docs = sum(c["documents"] for c in manifest.collections.values())
    out.print(
        f"backed up version {manifest.generation} of {manifest.source} ({docs} documents in"
        f" {len(manifest.collections)} collection(s)) into {dest}",
        markup=False,
    )


@click.command("restore")
@where_options
@click.argument("backup_folder", metavar="BACKUP")
@click.argument("target", required=False)
@click.pass_context
def restore_cmd(ctx: click.Context, backup_folder: str, target: str | None) -> None:
    """Write a backup as a new index at TARGET (default: --index / --store); an existing
    index is never written over."""
    from ragloom.operations import restore

    where = target or ctx.obj["index_path"]
    with progress("restore") as update:
        manifest = restore(backup_folder, where, _stepper(update))
    out.print(f"restored version {manifest.generation} of {manifest.source} as {where}")


@click.command("export")
@where_options
@click.argument("dest")
@click.option("--collection", "-c", "collections", multiple=True, help="Only this (repeatable).")
@click.pass_context
def export_cmd(ctx: click.Context, dest: str, collections: tuple[str, ...]) -> None:
    """Write the index as JSON lines to the new file DEST ("-": standard output): documents,
    metadata, chunk ids, index terms and vectors, for `ragloom import` anywhere."""
    from ragloom.operations.jsonl import export_jsonl

    with progress("export") as update:
        report = export_jsonl(
            ctx.obj["index_path"], dest, list(collections) or None, _stepper(update)
        )
    err.print(f"exported {report.documents} documents, {report.chunks} chunks", markup=False)


@click.command("import")
@where_options
@click.argument("source")
@click.pass_context
def import_cmd(ctx: click.Context, source: str) -> None:
    """Add the collections of an export (SOURCE, "-": standard input) to the index; nothing
    is re-chunked or re-embedded."""
    from ragloom.operations.jsonl import import_jsonl

    with progress("import") as update:
        report = import_jsonl(source, ctx.obj["index_path"], _stepper(update))
    out.print(
        f"imported {report.documents} documents, {report.chunks} chunks and {report.vectors}"
        f" vectors in {len(report.collections)} collection(s)"
    )


@click.command()
@click.argument("source")
@click.argument("target")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def migrate(source: str, target: str, as_json: bool) -> None:
    """Copy an index into another store (a file into PostgreSQL and back), vectors included.

    SOURCE and TARGET are index files or database URLs; nothing is re-embedded."""
    from rich.progress import Progress

    from ragloom.store.migrate import migrate as run_migration

    with Progress(console=err, transient=True) as progress:
        task = progress.add_task("copying documents", total=None)
        report = run_migration(source, target, lambda _, n: progress.advance(task, n))
    if as_json:
        click.echo(json.dumps(report.__dict__))
        return
    out.print(
        f"copied {report.documents} documents, {report.chunks} chunks and {report.vectors}"
        f" vectors in {len(report.collections)} collection(s) into {report.target}"
    )


@click.command("add-shard")
@click.argument("set_url")
@click.argument("shard_url")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def add_shard(set_url: str, shard_url: str, as_json: bool) -> None:
    """Grow a shard set (postgresql+shards://...) by one PostgreSQL server, online.

    Documents whose home becomes the new shard move in small atomic writes while searches and
    writes go on; prints the grown set's URL, which every process must use from now on."""
    from ragloom.store.shards.grow import add_shard as grow

    report = grow(set_url, shard_url)
    if as_json:
        click.echo(json.dumps(report.__dict__))
        return
    err.print(f"moved {sum(report.moved.values())} documents to the new shard")
    click.echo(report.url)
