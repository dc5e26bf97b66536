"""`ragloom index`: files, folders and JSONL records into a collection."""

from __future__ import annotations

import sys
import warnings
from typing import Any

import click
from rich.markup import escape

from ragloom.cli.common import (
    collection_option,
    max_file_size_option,
    open_index,
    pairs,
    stack,
    where_options,
)
from ragloom.cli.watching import watch_folders
from ragloom.console import err, out, print_json, report_line
from ragloom.console_widgets import progress, steps_progress
from ragloom.contract.cli import keywords
from ragloom.contract.cli import options as contract_options
from ragloom.index import Index, IndexReport
from ragloom.loading import JsonlFields, ReadPolicy

# The declared indexing options (`ragloom.contract`): a chunk size left out keeps the
# collection's own.
INDEXING = (
    "include",
    "exclude",
    "lenient",
    "keep_missing",
    "include_ignored",
    "max_chars",
    "overlap",
    "min_chars",
)

INDEX_OPTIONS = stack(
    click.argument("paths", nargs=-1, required=True),
    collection_option,
    contract_options(INDEXING, unset=True),
    click.option(
        "--chunk-mode",
        type=click.Choice(["auto", "prose", "markdown", "code"]),
        default=None,
        help="auto: Markdown by headings, source code by declarations, the rest as prose.",
    ),
    click.option(
        "--code-chunk-size", type=click.IntRange(min=0), help="Max characters a code chunk."
    ),
    click.option(
        "--split-identifiers/--no-split-identifiers",
        default=None,
        help="Index safeFetch / safe_fetch as 'safe fetch' too (set when a collection is new).",
    ),
    click.option(
        "--code-vocabulary/--no-code-vocabulary",
        default=None,
        help="Code: 'string' matches str, 'dictionary' dict (set when a collection is new).",
    ),
    click.option("--id-field", default="id", show_default=True, help="JSONL field with the id."),
    click.option("--title-field", default="title", show_default=True, help="JSONL title field."),
    click.option("--text-field", default="text", show_default=True, help="JSONL text field."),
    click.option("--collection-field", help="JSONL field naming each record's collection."),
    click.option(
        "--fail-fast", is_flag=True, help="Stop at the first file that cannot be indexed."
    ),
    max_file_size_option("Largest file read, in bytes or with K/M/G (0: no limit)."),
    click.option(
        "--convert-timeout",
        type=click.FloatRange(min=0.1),
        default=120.0,
        show_default=True,
        help="Seconds one PDF, Word file, ... may take to convert (then it is named).",
    ),
    click.option(
        "--field",
        "renames",
        multiple=True,
        metavar="FIELD=KEY",
        help="Store JSONL field FIELD as metadata KEY, e.g. ios_version=ios_version_min "
        "(repeatable).",
    ),
    click.option(
        "--language-field",
        default="language",
        show_default=True,
        help="JSONL field naming a record's code language (swift, python, ...): chunked as code.",
    ),
    click.option("--json", "as_json", is_flag=True, help="Print the report as JSON."),
    click.option(
        "--watch",
        is_flag=True,
        help="Then keep the index equal to the folders until Ctrl-C (docs/watching.md).",
    ),
    click.option("--poll", is_flag=True, help="With --watch: sweep the folders, no OS events."),
)


def _configure(
    index: Index,
    collection: str,
    chunk_size: int | None,
    overlap: int | None,
    min_chunk: int | None,
    chunk_mode: str | None,
    code_chunk_size: int | None,
    split_identifiers: bool | None,
    code_vocabulary: bool | None = None,
) -> None:
    """The collection's chunking and tokenizer settings the command's options change (the
    others left as they are)."""
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
    code_chunking = None
    if code_chunk_size is not None:
        code_chunking = index.configure(collection).code_chunking.to_dict()
        code_chunking["max_chars"] = code_chunk_size
        code_chunking["overlap"] = min(code_chunking["overlap"], code_chunk_size // 2)
    tokenizer = None
    switches = {"split_identifiers": split_identifiers, "code_vocabulary": code_vocabulary}
    if any(value is not None for value in switches.values()):
        tokenizer = index.configure(collection).tokenizer.to_dict()
        tokenizer.update({k: v for k, v in switches.items() if v is not None})
    index.configure(
        collection,
        chunking=chunking,
        chunk_mode=chunk_mode,
        code_chunking=code_chunking,
        tokenizer=tokenizer,
    )


@click.command("index")
@where_options
@INDEX_OPTIONS
@click.pass_context
def index_cmd(
    ctx: click.Context,
    paths: tuple[str, ...],
    collection: str,
    include: tuple[str, ...],
    exclude: tuple[str, ...],
    lenient: bool,
    keep_missing: bool,
    include_ignored: bool,
    max_chars: int | None,
    overlap: int | None,
    min_chars: int | None,
    chunk_mode: str | None,
    code_chunk_size: int | None,
    split_identifiers: bool | None,
    code_vocabulary: bool | None,
    fail_fast: bool,
    max_file_size: int,
    convert_timeout: float,
    as_json: bool,
    watch: bool,
    poll: bool,
    **jsonl_options: Any,  # the --*-field and --field options, read by `_jsonl_fields`
) -> None:
    """Index files and folders (text, code, JSONL, CSV, PDF, HTML, Word, slides, EPUB, notebooks).

    Unchanged files are skipped; a file that cannot be indexed is named with its reason and
    position, and the command then exits with status 1. The documents of a folder's files
    that are gone are removed (unless --keep-missing). With --watch it keeps running and
    follows every change until Ctrl-C.
    """
    keywords(INDEXING, {"max_chars": max_chars, "overlap": overlap, "min_chars": min_chars})
    with open_index(ctx, create=True) as index:
        _configure(
            index,
            collection,
            max_chars,
            overlap,
            min_chars,
            chunk_mode,
            code_chunk_size,
            split_identifiers,
            code_vocabulary,
        )
        fields = _jsonl_fields(jsonl_options)
        policy = ReadPolicy(max_file_size=max_file_size, convert_timeout=convert_timeout)
        if watch:
            _refuse_with_watch(keep_missing, fail_fast)
            options = dict(include=include, exclude=exclude, lenient=lenient, jsonl=fields)
            options.update(include_ignored=include_ignored, policy=policy, polling=poll)
            return watch_folders(index, list(paths), collection, as_json, **options)
        with warnings.catch_warnings(record=True) as caught, progress("indexing") as update:
            warnings.simplefilter("always")
            report = index.index_path(
                list(paths),
                collection,
                include,
                exclude,
                lenient,
                fields,
                on_file=update,
                fail_fast=fail_fast,
                policy=policy,
                keep_missing=keep_missing,
                include_ignored=include_ignored,
            )
        _print_warnings(caught, lenient)
        _finish_pending_work(index)
    if as_json:
        print_json({"ok": not report.failed, **report.to_dict("cli")})
    else:
        _print_index_report(report)
    if report.failed:
        sys.exit(1)


def _jsonl_fields(given: dict) -> JsonlFields:
    """How JSONL records map to documents, from the command's options."""
    return JsonlFields(
        id=given["id_field"],
        title=given["title_field"],
        text=given["text_field"],
        collection=given["collection_field"],
        rename=pairs(given["renames"], "--field", str),
        language=given["language_field"] or None,
    )


def _refuse_with_watch(keep_missing: bool, fail_fast: bool) -> None:
    for flag, given in (("--keep-missing", keep_missing), ("--fail-fast", fail_fast)):
        if given:
            raise click.UsageError(
                f"{flag} cannot be used with --watch (a watcher mirrors the"
                " folders and goes on past a file that fails)"
            )


def _print_warnings(caught: list[warnings.WarningMessage], lenient: bool) -> None:
    """The run's warnings but those the report lists (skipped and failed files; with
    --lenient, skipped records are shown too)."""
    for warning in caught:
        message = str(warning.message)
        if not message.startswith(("skipped ", "failed ")) or (
            lenient and message.startswith("skipped ")
        ):
            err.print(f"[yellow]warning:[/] {escape(message)}", highlight=False)


def _finish_pending_work(index: Index) -> None:
    """Leave the index in its steady state before exiting: new chunks flushed to segment
    files, due merges done, search graphs built, stale fusion profiles refreshed (what a
    process that keeps the index open would otherwise do in the background), with progress
    on a terminal."""
    with steps_progress("finishing segments, search graphs and fusion profiles") as update:
        index.optimize(on_step=update)


def _print_index_report(report: IndexReport) -> None:
    """Skipped and failed files on stderr, then the summary line (and an error if any failed)."""
    for path, reason in report.skipped:
        line = f"[yellow]skipped[/] {escape(path)}: {escape(reason)}"
        err.print(line, highlight=False, soft_wrap=True)
    for failure in report.failed:
        reason = failure.reason.removeprefix(f"{failure.path}: ").removeprefix(f"{failure.path}, ")
        line = f"[red]failed[/] {escape(failure.path)}: {escape(reason)}"
        err.print(line, highlight=False, soft_wrap=True)
    out.print(report_line(report))
    for held in report.held:
        err.print(f"warning: {held}", highlight=False, markup=False, soft_wrap=True)
    if report.pending:
        err.print(
            f"warning: {report.pending} chunk(s) wait for vectors ({report.embedding_error}); "
            "they are searchable lexically now; run `ragloom reembed --pending` once the "
            "embedding service is back",
            highlight=False,
            markup=False,
        )
    if report.failed:
        hints = dict.fromkeys(h for f in report.failed if (h := f.hint_for("cli")))
        click.echo(
            f"error: {len(report.failed)} of {report.files} file(s) could not be indexed"
            " (the others were)",
            err=True,
        )
        for hint in hints:
            click.echo(f"hint: {hint}", err=True)
