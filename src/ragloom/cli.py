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
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ragloom import __version__
from ragloom.errors import RagloomError
from ragloom.index import DEFAULT_COLLECTION, Index
from ragloom.lexical import BM25Params
from ragloom.loading import JsonlFields
from ragloom.retrieval.search import SearchOptions

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
    return Index(ctx.obj["index_path"], create=create, embedder=ctx.obj["embedder"])


def _print_json(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=2))


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


def _store(key: str) -> Callable[[click.Context, click.Parameter, str | None], None]:
    """Option callback: a value given after the command overrides the one given before."""

    def store(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
        if value is not None:
            if key == "embedder":
                from ragloom.embedding.resolve import check_spec

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


def where_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """`--index` and `--embedder` after the command too (`ragloom serve --index x.db`)."""
    return index_after(embedder_after(command))


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--index",
    "index_path",
    envvar="RAGLOOM_INDEX",
    default="ragloom.db",
    show_default=True,
    help="Index file (env RAGLOOM_INDEX).",
)
@click.option(
    "--embedder",
    envvar="RAGLOOM_EMBEDDER",
    default="auto",
    show_default=True,
    help="Embedding model: auto (a collection's own; the local model for new ones when "
    "installed), none, local, openai:MODEL@URL or ollama:MODEL@URL (env RAGLOOM_EMBEDDER).",
)
@click.option(
    "--collection", "-c", default=None, help="Collection for every command (default: default)."
)
@click.version_option(__version__, prog_name="ragloom")
@click.pass_context
def cli(ctx: click.Context, index_path: str, embedder: str, collection: str | None) -> None:
    """ragloom: index your own files and search them, offline.

    --index, --embedder and --collection go before or after the command.
    """
    from ragloom.embedding.resolve import check_spec

    check_spec(embedder)
    ctx.ensure_object(dict)
    ctx.obj["index_path"] = index_path
    ctx.obj["embedder"] = embedder
    ctx.obj["collection"] = collection


@cli.command("index")
@where_options
@click.argument("paths", nargs=-1, required=True)
@collection_option
@click.option("--include", multiple=True, help="Glob of files to take inside folders (repeatable).")
@click.option("--exclude", multiple=True, help="Glob of files to leave out (repeatable).")
@click.option("--lenient", is_flag=True, help="Replace invalid UTF-8 and skip bad JSONL lines.")
@click.option("--chunk-size", type=click.IntRange(min=0), help="Max characters a chunk (0: whole).")
@click.option("--overlap", type=click.IntRange(min=0), help="Characters shared by adjacent chunks.")
@click.option("--min-chunk", type=click.IntRange(min=0), help="Drop fragments shorter than this.")
@click.option(
    "--chunk-mode",
    type=click.Choice(["auto", "prose", "markdown", "code"]),
    default=None,
    help="auto: Markdown by headings, source code by declarations, the rest as prose.",
)
@click.option("--code-chunk-size", type=click.IntRange(min=0), help="Max characters a code chunk.")
@click.option(
    "--split-identifiers/--no-split-identifiers",
    default=None,
    help="Index safeFetch / safe_fetch as 'safe fetch' too (set when a collection is new).",
)
@click.option("--id-field", default="id", show_default=True, help="JSONL field with the id.")
@click.option("--title-field", default="title", show_default=True, help="JSONL title field.")
@click.option("--text-field", default="text", show_default=True, help="JSONL text field.")
@click.option("--collection-field", help="JSONL field naming each record's collection.")
@click.option(
    "--field",
    "renames",
    multiple=True,
    metavar="FIELD=KEY",
    help="Store JSONL field FIELD as metadata KEY, e.g. ios_version=ios_version_min (repeatable).",
)
@click.option(
    "--language-field",
    default="language",
    show_default=True,
    help="JSONL field naming a record's code language (swift, python, ...): chunked as code.",
)
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
    code_chunk_size: int | None,
    split_identifiers: bool | None,
    id_field: str,
    title_field: str,
    text_field: str,
    collection_field: str | None,
    renames: tuple[str, ...],
    language_field: str,
    as_json: bool,
) -> None:
    """Index files and folders (text, Markdown, JSONL, source code); unchanged files are skipped."""
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
        code_chunking = None
        if code_chunk_size is not None:
            code_chunking = index.configure(collection).code_chunking.to_dict()
            code_chunking["max_chars"] = code_chunk_size
            code_chunking["overlap"] = min(code_chunking["overlap"], code_chunk_size // 2)
        tokenizer = None
        if split_identifiers is not None:
            tokenizer = {
                **index.configure(collection).tokenizer.to_dict(),
                "split_identifiers": split_identifiers,
            }
        index.configure(
            collection,
            chunking=chunking,
            chunk_mode=chunk_mode,
            code_chunking=code_chunking,
            tokenizer=tokenizer,
        )
        fields = JsonlFields(
            id=id_field,
            title=title_field,
            text=text_field,
            collection=collection_field,
            rename=_pairs(renames, "--field", str),
            language=language_field or None,
        )
        with warnings.catch_warnings(record=True) as caught, _progress("indexing") as update:
            warnings.simplefilter("always")
            report = index.index_path(
                list(paths), collection, include, exclude, lenient, fields, on_file=update
            )
        for warning in caught:
            if not str(warning.message).startswith("skipped ") or lenient:
                err.print(f"[yellow]warning:[/] {escape(str(warning.message))}", highlight=False)
    if as_json:
        _print_json({"ok": True, **report.to_dict()})
        return
    for path, reason in report.skipped:
        err.print(f"[yellow]skipped[/] {escape(path)}: {escape(reason)}", highlight=False)
    out.print(
        f"indexed {report.documents} document(s), {report.chunks} chunk(s) from "
        f"{report.files} file(s); {report.unchanged} unchanged, {len(report.skipped)} skipped"
        + (
            f"; {report.fragments} fragment(s) under --min-chunk dropped"
            if report.fragments
            else ""
        )
    )
    if report.pending:
        err.print(
            f"warning: {report.pending} chunk(s) wait for vectors ({report.embedding_error}); "
            "they are searchable lexically now; run `ragloom reembed --pending` once the "
            "embedding service is back",
            highlight=False,
            markup=False,
        )


def _json_option(value: str | None, name: str) -> Any:
    if value is None:
        return None
    try:
        return json.loads(value)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(f"not valid JSON ({exc.msg})", param_hint=name) from None


def _pairs(values: tuple[str, ...], name: str, cast: Callable[[str], Any]) -> dict[str, Any]:
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


def retrieval_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """The options shared by `search` and `context`."""
    options = [
        click.option("--top-k", "-k", default=5, show_default=True, type=click.IntRange(min=1)),
        collection_option,
        click.option(
            "--mode",
            type=click.Choice(["lexical", "dense", "hybrid"]),
            help="Default: hybrid when the collection has vectors, else lexical.",
        ),
        click.option(
            "--fusion", type=click.Choice(["rrf", "weighted"]), default="rrf", show_default=True
        ),
        click.option("--rrf-k", type=float, default=60.0, show_default=True),
        click.option(
            "--weight",
            "weights",
            multiple=True,
            metavar="LEG=W",
            help="Per-leg fusion weight, e.g. dense=0.7 (repeatable).",
        ),
        click.option(
            "--min-similarity",
            type=float,
            default=None,
            help="Drop dense-only hits below this cosine (default: the floor measured for "
            "the collection's model; -1 keeps them all).",
        ),
        click.option("--min-score", type=float, help="Drop hits whose final score is lower."),
        click.option(
            "--filter",
            "filter_json",
            metavar="JSON",
            help='Metadata filter, e.g. \'{"chapter_num": {"$gte": 9}}\'.',
        ),
        click.option(
            "--boost",
            "boost_json",
            multiple=True,
            metavar="JSON",
            help='Boost rule, e.g. \'{"when": {"scholar_id": "calvin"}, "factor": 1.1}\'.',
        ),
        click.option(
            "--max-per",
            multiple=True,
            metavar="KEY=N",
            help="At most N hits per value of a metadata key (repeatable); hits without "
            "the key are not capped.",
        ),
        click.option(
            "--max-per-missing",
            type=click.Choice(["keep", "group"]),
            default="keep",
            show_default=True,
            help="Hits without a --max-per key: keep them all, or cap them as one group.",
        ),
        click.option("--mmr", type=float, metavar="LAMBDA", help="MMR diversity (0..1)."),
        click.option("--strict", is_flag=True, help="Fail instead of answering from BM25 alone."),
        click.option("--k1", type=float, help="BM25 k1 (default: the collection's)."),
        click.option("--b", "b", type=float, help="BM25 b (default: the collection's)."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def _search_kwargs(index: Index, p: dict[str, Any]) -> dict[str, Any]:
    """Turn the shared CLI options into `Index.search` keywords."""
    bm25 = None
    if p["k1"] is not None or p["b"] is not None:
        default = index.configure(p["collection"]).bm25
        bm25 = BM25Params(
            p["k1"] if p["k1"] is not None else default.k1,
            p["b"] if p["b"] is not None else default.b,
        )
    diversity: dict[str, Any] = {}
    if p["max_per"]:
        diversity["max_per"] = _pairs(p["max_per"], "--max-per", int)
        diversity["missing"] = p["max_per_missing"]
    if p["mmr"] is not None:
        diversity["mmr"] = {"lambda": p["mmr"]}
    return {
        "mode": p["mode"],
        "fusion": p["fusion"],
        "rrf_k": p["rrf_k"],
        "weights": _pairs(p["weights"], "--weight", float),
        "min_dense_similarity": p["min_similarity"],
        "min_score": p["min_score"],
        "filters": _json_option(p["filter_json"], "--filter"),
        "boosts": [_json_option(b, "--boost") for b in p["boost_json"]],
        "diversity": diversity or None,
        "strict": p["strict"],
        "bm25": bm25,
    }


def _print_explain(explain: dict[str, Any]) -> None:
    legs = ", ".join(
        f"{leg} #{info['rank']} ({'cosine' if leg == 'dense' else 'bm25'} "
        f"{info.get('score', info.get('cosine')):.3f})"
        for leg, info in explain["legs"].items()
    )
    fusion = explain["fusion"]
    lines = [f"     legs: {legs or 'none'}  (match: {explain['match']})"]
    lines.append(f"     fusion: {fusion['method']}  -> {fusion['score']:.4f}")
    for boost in explain["boosts"]:
        lines.append(f"     boost: x{boost['factor']} ({boost['rule']})")
    for note in explain["diversity"]:
        lines.append(f"     diversity: {note}")
    lines.append(f"     final score: {explain['final_score']:.4f}")
    for line in lines:
        out.print(line, markup=False, highlight=False)


def _found_by(hit: Any) -> str:
    """`found by both (lexical #1, dense #3)`: which leg found a hit, at which rank."""
    ranks = [
        f"{leg} #{rank}"
        for leg, rank in (("lexical", hit.lexical_rank), ("dense", hit.dense_rank))
        if rank is not None
    ]
    return f"found by {hit.match}" + (f" ({', '.join(ranks)})" if len(ranks) > 1 else "")


@cli.command()
@where_options
@click.argument("query")
@retrieval_options
@click.option("--explain", is_flag=True, help="Show each stage's contribution to every hit.")
@click.option("--json", "as_json", is_flag=True, help="Print hits as JSON.")
@click.pass_context
def search(ctx: click.Context, query: str, explain: bool, as_json: bool, **p: Any) -> None:
    """Search the index and print the best chunks."""
    with _open(ctx) as index:
        hits = index.search(
            query,
            top_k=p["top_k"],
            collection=p["collection"],
            explain=explain,
            **_search_kwargs(index, p),
        )
    if as_json:
        _print_json({"ok": True, "query": query, **hits.to_dict()})
        return
    if hits.degraded:
        err.print(f"warning: {hits.reason}", highlight=False, markup=False)
    if hits.below_floor and len(hits) < p["top_k"]:
        err.print(
            f"note: {hits.below_floor} hit(s) found only by the dense leg scored below the "
            f"floor {hits.dense_floor:.2f} and were left out (--min-similarity)",
            highlight=False,
            markup=False,
        )
    if not hits:
        out.print("no results")
        return
    legs = "lexical + dense" if hits.mode == "hybrid" else hits.mode
    out.print(f"[dim]{hits.mode} search ({legs}), {len(hits)} hit(s)[/]")
    for hit in hits:
        heading = f"[bold]{hit.rank}.[/] {escape(hit.document_id)}  [dim]{escape(hit.chunk_id)} "
        heading += f"chars {hit.start}-{hit.end}  score {hit.score:.3f}  {_found_by(hit)}[/]"
        out.print(heading)
        if hit.explain:
            _print_explain(hit.explain)
        out.print(hit.text.strip(), markup=False)
        out.print()


@cli.command()
@where_options
@click.argument("query")
@retrieval_options
@click.option("--budget", type=click.IntRange(min=1), help="Token budget (cl100k tokens).")
@click.option(
    "--section",
    "sections",
    multiple=True,
    metavar="COLLECTION[:TOP_K[:LABEL]]",
    help="Search several collections, each a labelled section (repeatable).",
)
@click.option("--no-instruction", is_flag=True, help="Leave out the grounding instruction.")
@click.option("--json", "as_json", is_flag=True, help="Print the packed context as JSON.")
@click.pass_context
def context(
    ctx: click.Context,
    query: str,
    budget: int | None,
    sections: tuple[str, ...],
    no_instruction: bool,
    as_json: bool,
    **p: Any,
) -> None:
    """Print a numbered, cited context block for a prompt, within a token budget."""
    from ragloom.context import GROUNDING_INSTRUCTION

    requests = []
    for spec in sections:
        name, _, rest = spec.partition(":")
        top_k, _, label = rest.partition(":")
        if not name or (top_k and not top_k.isdigit()):
            raise click.BadParameter(
                f"expected COLLECTION[:TOP_K[:LABEL]], got {spec!r}", param_hint="--section"
            )
        requests.append(
            {"collection": name, "top_k": int(top_k or p["top_k"]), "label": label or None}
        )
    with _open(ctx) as index:
        packed = index.context(
            query,
            p["collection"],
            p["top_k"],
            collections=requests or None,
            budget=budget,
            instruction=None if no_instruction else GROUNDING_INSTRUCTION,
            **_search_kwargs(index, p),
        )
    if as_json:
        _print_json({"ok": True, "query": query, **packed.to_dict()})
        return
    out.print(packed.text, markup=False, highlight=False)
    err.print(
        f"{packed.tokens} tokens, {len(packed.passages)} passage(s)"
        + (f", {packed.omitted} left out for the budget" if packed.omitted else ""),
        highlight=False,
    )


@cli.command()
@where_options
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
    columns = (
        "collection",
        "documents",
        "chunks",
        "vectors",
        "pending",
        "terms",
        "avg terms/chunk",
    )
    for column in columns:
        table.add_column(column)
    for name, c in data["collections"].items():
        table.add_row(
            name,
            *(str(c[k]) for k in ("documents", "chunks", "vectors", "pending", "terms")),
            str(c["avg_chunk_terms"]),
        )
    out.print(table)
    for d in docs:
        out.print(f"{d.collection}  {d.doc_id}  ({d.chunks} chunks)  {d.source or ''}")


@cli.command()
@where_options
@click.argument("doc_id")
@collection_option
@click.pass_context
def delete(ctx: click.Context, doc_id: str, collection: str) -> None:
    """Delete a document and all of its chunks."""
    with _open(ctx) as index:
        removed = index.delete(doc_id, collection)
    out.print(f"deleted {doc_id} ({removed} chunk(s))")


@cli.command()
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


@cli.command()
@where_options
@click.option("--json", "as_json", is_flag=True, help="Print the problems as JSON.")
@click.pass_context
def check(ctx: click.Context, as_json: bool) -> None:
    """Verify the index: SQLite integrity, and that documents, chunks, postings, statistics
    and vectors agree with each other. Exits 1 when anything is wrong."""
    with Index(ctx.obj["index_path"], create=False, embedder=None) as index:
        problems = index.check()
    if as_json:
        _print_json({"ok": not problems, "problems": problems})
    elif problems:
        for problem in problems:
            out.print(f"problem: {problem}", markup=False, highlight=False)
    else:
        out.print("ok: documents, chunks, postings, statistics and vectors agree")
    if problems:
        sys.exit(1)


@cli.command("eval")
@embedder_after
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
@click.option(
    "--mode",
    type=click.Choice(["lexical", "dense", "hybrid"]),
    default="lexical",
    show_default=True,
    help="dense and hybrid embed the corpus with --embedder.",
)
@click.option("--fusion", type=click.Choice(["rrf", "weighted"]), default="rrf", show_default=True)
@click.option("--split-identifiers", is_flag=True, help="Identifier-aware tokens (for code).")
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
@click.pass_context
def eval_cmd(
    ctx: click.Context,
    folder: str,
    split: str,
    k1: float,
    b: float,
    chunk_size: int,
    keep_self_hits: bool,
    mode: str,
    fusion: str,
    split_identifiers: bool,
    as_json: bool,
) -> None:
    """Evaluate retrieval on a BEIR-layout collection (corpus.jsonl, queries.jsonl, qrels/)."""
    from ragloom.evaluation.runner import run_beir, whole_document_config

    chunking = {
        "max_chars": chunk_size,
        "overlap": 0 if chunk_size == 0 else min(80, chunk_size // 5),
    }
    config = whole_document_config(
        bm25={"k1": k1, "b": b},
        chunking=chunking,
        tokenizer={"split_identifiers": split_identifiers},
    )
    with _progress("indexing") as update:
        seen = 0

        def progress(stage: str, n: int, total: int) -> None:
            nonlocal seen
            seen += n
            update(seen, 0)

        spec = ctx.obj["embedder"]
        embedder = None if mode == "lexical" else ("local" if spec in ("auto", "none") else spec)
        options = SearchOptions(mode=mode, fusion=fusion)
        result = run_beir(
            folder,
            split,
            config,
            keep_self_hits=keep_self_hits,
            on_progress=progress,
            options=options,
            embedder=embedder,
        )
    if as_json:
        _print_json({"ok": True, **result.to_dict()})
        return
    table = Table(
        title=f"{result.dataset} {result.mode} ({split}, {result.queries} queries, "
        f"{result.documents} documents)"
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


@cli.command()
@where_options
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option(
    "--port",
    envvar="RAGLOOM_PORT",
    default=8181,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="Port (env RAGLOOM_PORT).",
)
@click.option(
    "--root",
    "roots",
    multiple=True,
    type=click.Path(exists=True, file_okay=False),
    help="Folder whose files POST /index may read (repeatable; none: path indexing off).",
)
@click.option("--token", envvar="RAGLOOM_TOKEN", help="Bearer token required (env RAGLOOM_TOKEN).")
@click.option(
    "--max-body",
    default=10 * 1024 * 1024,
    show_default=True,
    type=click.IntRange(min=1),
    help="Largest request body in bytes.",
)
@click.option("--access-log", is_flag=True, help="Log every request.")
@click.pass_context
def serve(
    ctx: click.Context,
    host: str,
    port: int,
    roots: tuple[str, ...],
    token: str | None,
    max_body: int,
    access_log: bool,
) -> None:
    """Run the HTTP sidecar (JSON API, OpenAPI at /openapi.json)."""
    from ragloom.server.runner import serve as run_server
    from ragloom.server.settings import ServerSettings

    embedder = ctx.obj.get("embedder", "auto")
    settings = ServerSettings.build(ctx.obj["index_path"], roots, token, max_body, embedder)
    run_server(settings, host=host, port=port, access_log=access_log)


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
        hint = exc.hint_for("cli")
        if hint:
            click.echo(f"hint: {hint}", err=True)
        sys.exit(1)
    except BrokenPipeError:
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
