"""Command line: `ragloom index|search|stats|delete|eval`."""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ragloom import __version__
from ragloom.errors import RagloomError
from ragloom.index import DEFAULT_COLLECTION, Index
from ragloom.lexical import BM25Params
from ragloom.loading import JsonlFields

err = Console(stderr=True)
out = Console(highlight=False, soft_wrap=True)


@contextmanager
def _progress(label: str) -> Iterator[Callable[[int, int], None]]:
    """A progress bar on stderr (hidden when stderr is not a terminal)."""
    with Progress(
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
        disable=not err.is_terminal,
    ) as bar:
        task = bar.add_task(label, total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield update


def _open(ctx: click.Context, create: bool = False) -> Index:
    return Index(ctx.obj["index_path"], create=create)


def _print_json(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=2))


collection_option = click.option(
    "--collection", "-c", default=DEFAULT_COLLECTION, show_default=True, help="Collection name."
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--index",
    "index_path",
    envvar="RAGLOOM_INDEX",
    default="ragloom.db",
    show_default=True,
    help="Index file (env RAGLOOM_INDEX).",
)
@click.version_option(__version__, prog_name="ragloom")
@click.pass_context
def cli(ctx: click.Context, index_path: str) -> None:
    """ragloom: index your own files and search them, offline."""
    ctx.ensure_object(dict)
    ctx.obj["index_path"] = index_path


@cli.command("index")
@click.argument("paths", nargs=-1, required=True)
@collection_option
@click.option("--include", multiple=True, help="Glob of files to take inside folders (repeatable).")
@click.option("--exclude", multiple=True, help="Glob of files to leave out (repeatable).")
@click.option("--lenient", is_flag=True, help="Replace invalid UTF-8 and skip bad JSONL lines.")
@click.option("--chunk-size", type=click.IntRange(min=0), help="Max characters a chunk (0: whole).")
@click.option("--overlap", type=click.IntRange(min=0), help="Characters shared by adjacent chunks.")
@click.option("--min-chunk", type=click.IntRange(min=0), help="Drop fragments shorter than this.")
@click.option("--chunk-mode", type=click.Choice(["auto", "prose", "markdown"]), default=None)
@click.option("--id-field", default="id", show_default=True, help="JSONL field with the id.")
@click.option("--title-field", default="title", show_default=True, help="JSONL title field.")
@click.option("--text-field", default="text", show_default=True, help="JSONL text field.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_context
def index_cmd(
    ctx: click.Context,
    paths: tuple[str, ...],
    collection: str,
    include: tuple[str, ...],
    exclude: tuple[str, ...],
    lenient: bool,
    chunk_size: int | None,
    overlap: int | None,
    min_chunk: int | None,
    chunk_mode: str | None,
    id_field: str,
    title_field: str,
    text_field: str,
    as_json: bool,
) -> None:
    """Index files and folders (.txt, .md, .jsonl); unchanged files are skipped."""
    with _open(ctx, create=True) as index:
        chunking = None
        if chunk_size is not None or overlap is not None or min_chunk is not None:
            current = index.configure(collection).chunking.to_dict()
            for key, value in (
                ("max_chars", chunk_size),
                ("overlap", overlap),
                ("min_chars", min_chunk),
            ):
                if value is not None:
                    current[key] = value
            if chunk_size == 0:
                current["overlap"] = 0
            chunking = current
        index.configure(collection, chunking=chunking, chunk_mode=chunk_mode)
        fields = JsonlFields(id=id_field, title=title_field, text=text_field)
        with warnings.catch_warnings(record=True) as caught, _progress("indexing") as update:
            warnings.simplefilter("always")
            report = index.index_path(
                list(paths), collection, include, exclude, lenient, fields, on_file=update
            )
        for warning in caught:
            if not str(warning.message).startswith("skipped ") or lenient:
                err.print(f"[yellow]warning:[/] {warning.message}", highlight=False)
    if as_json:
        _print_json({"ok": True, **report.to_dict()})
        return
    for path, reason in report.skipped:
        err.print(f"[yellow]skipped[/] {path}: {reason}", highlight=False)
    out.print(
        f"indexed {report.documents} document(s), {report.chunks} chunk(s) from "
        f"{report.files} file(s); {report.unchanged} unchanged, {len(report.skipped)} skipped"
    )


@cli.command()
@click.argument("query")
@click.option("--top-k", "-k", default=5, show_default=True, type=click.IntRange(min=1))
@collection_option
@click.option("--k1", type=float, help="BM25 k1 (default: the collection's).")
@click.option("--b", "b", type=float, help="BM25 b (default: the collection's).")
@click.option("--json", "as_json", is_flag=True, help="Print hits as JSON.")
@click.pass_context
def search(
    ctx: click.Context,
    query: str,
    top_k: int,
    collection: str,
    k1: float | None,
    b: float | None,
    as_json: bool,
) -> None:
    """Search the index and print the best chunks."""
    with _open(ctx) as index:
        bm25 = None
        if k1 is not None or b is not None:
            default = index.configure(collection).bm25
            bm25 = BM25Params(
                k1 if k1 is not None else default.k1, b if b is not None else default.b
            )
        hits = index.search(query, top_k=top_k, collection=collection, bm25=bm25)
    if as_json:
        _print_json({"ok": True, "query": query, "results": [h.to_dict() for h in hits]})
        return
    if not hits:
        out.print("no results")
        return
    for hit in hits:
        heading = f"[bold]{hit.rank}.[/] {hit.document_id}  [dim]{hit.chunk_id} "
        heading += f"chars {hit.start}-{hit.end}  score {hit.score:.3f}[/]"
        out.print(heading)
        out.print(hit.text.strip(), markup=False)
        out.print()


@cli.command()
@click.option("--json", "as_json", is_flag=True)
@click.option("--documents", "list_documents", is_flag=True, help="Also list documents.")
@click.pass_context
def stats(ctx: click.Context, as_json: bool, list_documents: bool) -> None:
    """Show what the index holds."""
    with _open(ctx) as index:
        data = index.stats()
        docs = index.documents(limit=10_000) if list_documents else []
    if as_json:
        if list_documents:
            data["document_list"] = [
                {"id": d.doc_id, "collection": d.collection, "source": d.source, "chunks": d.chunks}
                for d in docs
            ]
        _print_json({"ok": True, **data})
        return
    table = Table(title=f"ragloom index {data['path']}")
    for column in ("collection", "documents", "chunks", "terms", "avg terms/chunk"):
        table.add_column(column)
    for name, c in data["collections"].items():
        table.add_row(
            name, str(c["documents"]), str(c["chunks"]), str(c["terms"]), str(c["avg_chunk_terms"])
        )
    out.print(table)
    for d in docs:
        out.print(f"{d.collection}  {d.doc_id}  ({d.chunks} chunks)  {d.source or ''}")


@cli.command()
@click.argument("doc_id")
@collection_option
@click.pass_context
def delete(ctx: click.Context, doc_id: str, collection: str) -> None:
    """Delete a document and all of its chunks."""
    with _open(ctx) as index:
        removed = index.delete(doc_id, collection)
    out.print(f"deleted {doc_id} ({removed} chunk(s))")


@cli.command("eval")
@click.argument("folder", type=click.Path(file_okay=False))
@click.option("--split", default="test", show_default=True, help="Which qrels/<split>.tsv.")
@click.option("--k1", type=float, default=0.9, show_default=True)
@click.option("--b", "b", type=float, default=0.4, show_default=True)
@click.option(
    "--chunk-size",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Chunk documents (0: each document whole, the BEIR convention).",
)
@click.option(
    "--keep-self-hits",
    is_flag=True,
    help="Keep hits whose document id equals the query id (ignored by default).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
def eval_cmd(
    folder: str,
    split: str,
    k1: float,
    b: float,
    chunk_size: int,
    keep_self_hits: bool,
    as_json: bool,
) -> None:
    """Evaluate BM25 on a BEIR-layout collection (corpus.jsonl, queries.jsonl, qrels/)."""
    from ragloom.evaluation.runner import run_beir, whole_document_config

    chunking = {
        "max_chars": chunk_size,
        "overlap": 0 if chunk_size == 0 else min(80, chunk_size // 5),
    }
    config = whole_document_config(bm25={"k1": k1, "b": b}, chunking=chunking)
    with _progress("indexing") as update:
        seen = 0

        def progress(stage: str, n: int, total: int) -> None:
            nonlocal seen
            seen += n
            update(seen, 0)

        result = run_beir(
            folder, split, config, keep_self_hits=keep_self_hits, on_progress=progress
        )
    if as_json:
        _print_json({"ok": True, **result.to_dict()})
        return
    table = Table(
        title=f"{result.dataset} ({split}, {result.queries} queries, {result.documents} documents)"
    )
    for column in ("nDCG@10", "Recall@100", "MRR@10", "index s", "queries/s"):
        table.add_column(column, justify="right")
    m = result.metrics
    table.add_row(
        f"{m['ndcg@10']:.4f}",
        f"{m['recall@100']:.4f}",
        f"{m['mrr@10']:.4f}",
        f"{result.index_seconds:.2f}",
        f"{result.queries_per_second:.0f}",
    )
    out.print(table)


def main(argv: list[str] | None = None) -> None:
    """Console entry point: typed errors become a message and a non-zero exit code."""
    try:
        code = cli.main(args=argv, prog_name="ragloom", standalone_mode=False)
    except click.exceptions.Abort:
        err.print("aborted")
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except RagloomError as exc:
        click.echo(f"error: {exc.message}", err=True)
        if exc.hint:
            click.echo(f"hint: {exc.hint}", err=True)
        sys.exit(1)
    except BrokenPipeError:
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
