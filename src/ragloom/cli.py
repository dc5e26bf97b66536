"""Command line: `ragloom index|search|stats|delete|eval`."""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import Callable
from typing import Any

import click
from rich.markup import escape
from rich.table import Table

from ragloom.command_options import embedder_after, index_after
from ragloom.console import err, out, print_json, progress, report_line
from ragloom.errors import RagloomError
from ragloom.index import DEFAULT_COLLECTION, Index, IndexReport
from ragloom.loading import DEFAULT_MAX_FILE_SIZE, JsonlFields, ReadPolicy
from ragloom.version import __version__

_progress = progress  # (shared with the evaluation commands: ragloom.console)


def _open(ctx: click.Context, create: bool = False) -> Index:
    return Index(
        ctx.obj["index_path"], create=create, embedder=ctx.obj["embedder"], llm=ctx.obj["llm"]
    )


_print_json = print_json


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


class _Commands(click.Group):
    """`ragloom eval` and `ragloom tune` live with the evaluation code, `ragloom postgres`
    with the local server launcher, imported only when one of them runs (so that
    `ragloom serve` and the other commands start fast)."""

    lazy = {
        "eval": "ragloom.evaluation.commands:eval_cmd",
        "tune": "ragloom.evaluation.commands:tune_cmd",
        "postgres": "ragloom.local_postgres.command:postgres",
    }

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in self.lazy and name not in self.commands:
            import importlib

            module, _, attr = self.lazy[name].partition(":")
            self.add_command(getattr(importlib.import_module(module), attr), name)
        return super().get_command(ctx, name)


def where_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """`--index` and `--embedder` after the command too (`ragloom serve --index x.db`)."""
    return index_after(embedder_after(command))


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--index",
    "index_path",
    envvar="RAGLOOM_INDEX",
    default="ragloom.db",
    show_default=True,
    help="Index file (env RAGLOOM_INDEX).",
)
@click.option(
    "--store",
    envvar="RAGLOOM_STORE",
    default=None,
    help="Where the index lives, instead of --index: a file or a database URL such as "
    "postgresql://user@host/db (env RAGLOOM_STORE; may also follow the command).",
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
@click.option(
    "--llm",
    envvar="RAGLOOM_LLM",
    default=None,
    help="LLM for --expand llm, --hops and --rerank llm: openai:MODEL@URL or "
    "ollama:MODEL@URL, options ?timeout=SECONDS (env RAGLOOM_LLM; key RAGLOOM_LLM_API_KEY; "
    "may also follow the command).",
)
@click.version_option(__version__, prog_name="ragloom")
@click.pass_context
def cli(
    ctx: click.Context,
    index_path: str,
    store: str | None,
    embedder: str,
    collection: str | None,
    llm: str | None,
) -> None:
    """ragloom: index your own files and search them, offline.

    --index, --embedder and --collection go before or after the command (--store and --llm
    too).
    """
    from ragloom.embedding.resolve import check_spec
    from ragloom.llm.client import check_llm_spec

    check_spec(embedder)
    if llm:
        check_llm_spec(llm)
    ctx.ensure_object(dict)
    ctx.obj["index_path"] = store or index_path
    ctx.obj["embedder"] = embedder
    ctx.obj["collection"] = collection
    ctx.obj["llm"] = llm or None


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
@click.option("--fail-fast", is_flag=True, help="Stop at the first file that cannot be indexed.")
@click.option(
    "--max-file-size",
    type=ByteSize(),
    default=str(DEFAULT_MAX_FILE_SIZE // 2**20) + "M",
    show_default=True,
    help="Largest file read, in bytes or with K/M/G (0: no limit).",
)
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
    fail_fast: bool,
    max_file_size: int,
    renames: tuple[str, ...],
    language_field: str,
    as_json: bool,
) -> None:
    """Index files and folders (text, Markdown, JSONL, source code); unchanged files are skipped.

    Every good file is indexed; a file that cannot be is reported with its reason and
    position, and the command then exits with status 1.
    """
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
                list(paths),
                collection,
                include,
                exclude,
                lenient,
                fields,
                on_file=update,
                fail_fast=fail_fast,
                policy=ReadPolicy(max_file_size=max_file_size),
            )
        for warning in caught:
            message = str(warning.message)
            if not message.startswith(("skipped ", "failed ")) or (
                lenient and message.startswith("skipped ")
            ):
                err.print(f"[yellow]warning:[/] {escape(message)}", highlight=False)
    if as_json:
        _print_json({"ok": not report.failed, **report.to_dict("cli")})
    else:
        _print_index_report(report)
    if report.failed:
        sys.exit(1)


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
            "--fusion",
            type=click.Choice(["adaptive", "rrf", "weighted"]),
            help="Default: the collection's own (ragloom tune --apply), else adaptive "
            "(each leg weighted per collection and per query).",
        ),
        click.option(
            "--normalization",
            type=click.Choice(["minmax", "zscore"]),
            help="Score normalization of weighted fusion (default z-score).",
        ),
        click.option("--rrf-k", type=float, help="RRF's k (default 60)."),
        click.option(
            "--candidates", type=click.IntRange(min=1), help="Hits each leg fetches (default 40)."
        ),
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
        click.option(
            "--min-score",
            type=float,
            help="Drop hits whose final score is lower (hybrid, lexical and dense scores run "
            "0-1, the same scale in every search of a collection).",
        ),
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
        click.option(
            "--expand",
            type=click.Choice(["llm", "prf"]),
            help="llm: also search LLM rephrasings (needs --llm); prf: RM3 feedback on BM25.",
        ),
        click.option(
            "--variants",
            "max_variants",
            type=click.IntRange(2, 8),
            default=5,
            show_default=True,
            help="Queries searched with --expand llm, the original included.",
        ),
        click.option(
            "--rerank",
            metavar="SPEC",
            help="Rerank with onnx:FOLDER, rerank:MODEL@URL (cohere/jina/vllm/infinity), "
            "tei:MODEL@URL, llm or llm:pointwise.",
        ),
        click.option(
            "--rerank-depth",
            type=click.IntRange(min=1),
            default=30,
            show_default=True,
            help="Candidates the reranker scores.",
        ),
        click.option(
            "--hops",
            type=click.IntRange(1, 5),
            default=1,
            show_default=True,
            help="Multi-hop: up to N retrieval rounds, the LLM deciding (needs --llm).",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def _search_kwargs(index: Index, p: dict[str, Any]) -> dict[str, Any]:
    """Turn the shared CLI options into `Index.search` keywords."""
    # Only what was given: the search fills the rest from the collection's own settings
    # (asking `configure` for them created a missing collection: reads never write).
    bm25 = {name: p[name] for name in ("k1", "b") if p[name] is not None} or None
    diversity: dict[str, Any] = {}
    if p["max_per"]:
        diversity["max_per"] = _pairs(p["max_per"], "--max-per", int)
        diversity["missing"] = p["max_per_missing"]
    if p["mmr"] is not None:
        diversity["mmr"] = {"lambda": p["mmr"]}
    return {
        "mode": p["mode"],
        "fusion": p["fusion"],
        "normalization": p["normalization"],
        "rrf_k": p["rrf_k"],
        "candidates": p["candidates"],
        "weights": _pairs(p["weights"], "--weight", float) or None,
        "min_dense_similarity": p["min_similarity"],
        "min_score": p["min_score"],
        "filters": _json_option(p["filter_json"], "--filter"),
        "boosts": [_json_option(b, "--boost") for b in p["boost_json"]],
        "diversity": diversity or None,
        "strict": p["strict"],
        "bm25": bm25,
        "expand": p["expand"],
        "max_variants": p["max_variants"],
        "rerank": p["rerank"] or False,
        "rerank_depth": p["rerank_depth"],
        "hops": p["hops"],
    }


def _weights_line(fusion: dict[str, Any]) -> str:
    """`lexical 0.47 x 0.53 + dense 0.53 x 0.62 (probes: lexical MRR 0.93, dense 0.93; ...)`."""
    weights, shares, why = fusion["weights"], fusion["shares"], fusion["why"]
    estimated = set(shares.get("estimated", ()))  # not in that leg's list: at most this
    parts = " + ".join(
        f"{leg} {weights[leg]:.2f} x {'<=' if leg in estimated else ''}{shares[leg]:.3f}"
        for leg in weights
    )
    if "probes" in why:
        probes = why["probes"]
        basis = f"probes: lexical MRR {probes['lexical_mrr']}, dense {probes['dense_mrr']}"
    else:
        basis = why["basis"]
    agreement = why.get("agreement")
    if agreement:
        basis += (
            f"; agreement: lexical {agreement['lexical_support']:.2f}, "
            f"dense {agreement['dense_support']:.2f}"
        )
    return f"{parts}  ({basis})"


def _print_explain(explain: dict[str, Any]) -> None:
    legs = ", ".join(
        f"{leg} #{info['rank']} ({'cosine' if leg == 'dense' else 'bm25'} "
        f"{info.get('score', info.get('cosine')):.3f})"
        for leg, info in explain["legs"].items()
    )
    fusion = explain["fusion"]
    lines = [f"     legs: {legs or 'none'}  (match: {explain['match']})"]
    lines.append(f"     fusion: {fusion['method']}  -> {fusion['score']:.4f}")
    if "why" in fusion:  # adaptive: the weights this query used, and why
        lines.append(f"     weights: {_weights_line(fusion)}")
    for boost in explain["boosts"]:
        lines.append(f"     boost: x{boost['factor']} ({boost['rule']})")
    for note in explain["diversity"]:
        lines.append(f"     diversity: {note}")
    if "variants" in explain:
        found = ", ".join(f"#{v['variant']} rank {v['rank']}" for v in explain["variants"])
        lines.append(f"     query variants: {found}")
    if "hop" in explain:
        lines.append(f"     found in hop {explain['hop']}")
    if "rerank" in explain:
        step = explain["rerank"]
        lines.append(
            f"     rerank: {step['model']} {step['score']:.4f} (was #{step['rank_before']})"
        )
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
@click.option("--tokens", is_flag=True, help="Count each hit's tokens and their total.")
@click.option("--json", "as_json", is_flag=True, help="Print hits as JSON.")
@click.pass_context
def search(
    ctx: click.Context, query: str, explain: bool, tokens: bool, as_json: bool, **p: Any
) -> None:
    """Search the index and print the best chunks."""
    with _open(ctx) as index:
        hits = index.search(
            query,
            top_k=p["top_k"],
            collection=p["collection"],
            explain=explain,
            with_tokens=tokens,
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
    _print_steps(hits)
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


def _print_steps(hits: Any) -> None:
    """What expansion, rerank and multi-hop did (stderr)."""
    lines = []
    if hits.variants and len(hits.variants) > 1:
        lines.append("searched: " + " | ".join(hits.variants))
    rerank = hits.steps.get("rerank")
    if rerank and not rerank["degraded"]:
        lines.append(f"reranked {rerank['candidates']} candidate(s) with {rerank['model']}")
    for hop in hits.trace or ():
        lines.append(f"hop {hop['hop']}: {hop['query']!r} -> {len(hop['new_chunk_ids'])} new")
    if hits.trace:
        lines.append(f"multi-hop stopped: {hits.steps['hops']['stopped']}")
    if hits.total_tokens is not None:
        lines.append(f"{hits.total_tokens} tokens in {len(hits)} hit(s)")
    for line in lines:
        err.print(line, highlight=False, markup=False)


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
    if "replicas" in data:
        servers = Table(title="database servers")
        for column in ("host", "role", "replay lag (bytes)", "last replay (s ago)", "note"):
            servers.add_column(column)
        for server in data["replicas"]:
            servers.add_row(
                server["host"],
                server.get("role", "-"),
                str(server.get("lag_bytes", "-")),
                str(server.get("last_replay_seconds_ago", "-")),
                "" if server["reachable"] else escape(server.get("error", "unreachable")),
            )
        out.print(servers)
    if "shards" in data:
        shards = Table(title="shards")
        for column in ("shard", "location", "documents", "chunks", "note"):
            shards.add_column(column)
        for shard in data["shards"]:
            held = shard.get("collections", {}).values()
            shards.add_row(
                str(shard["shard"]),
                escape(shard["location"]),
                str(sum(c["documents"] for c in held)) if shard["reachable"] else "-",
                str(sum(c["chunks"] for c in held)) if shard["reachable"] else "-",
                "" if shard["reachable"] else escape(shard.get("error", "unreachable")),
            )
        out.print(shards)
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
        _print_json({**report.to_dict(), "repaired": repaired.__dict__ if repaired else None})
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


def _stepper(update: Callable[[int, int], None]) -> Callable[[str, int, int], None]:
    return lambda _what, done, total: update(done, total)


@cli.command("backup")
@where_options
@click.argument("dest")
@click.option("--json", "as_json", is_flag=True, help="Print the backup's manifest as JSON.")
@click.pass_context
def backup_cmd(ctx: click.Context, dest: str, as_json: bool) -> None:
    """Copy the index, live, into the new folder DEST: one committed version, taken while
    writes go on (PostgreSQL: a logical copy of ragloom's schema)."""
    from ragloom.operations import backup

    with _progress("backup") as update:
        manifest = backup(ctx.obj["index_path"], dest, _stepper(update))
    if as_json:
        _print_json({"ok": True, "backup": dest, **manifest.__dict__})
        return
    docs = sum(c["documents"] for c in manifest.collections.values())
    out.print(
        f"backed up version {manifest.generation} of {manifest.source} ({docs} documents in"
        f" {len(manifest.collections)} collection(s)) into {dest}",
        markup=False,
    )


@cli.command("restore")
@where_options
@click.argument("backup_folder", metavar="BACKUP")
@click.argument("target", required=False)
@click.pass_context
def restore_cmd(ctx: click.Context, backup_folder: str, target: str | None) -> None:
    """Write a backup as a new index at TARGET (default: --index / --store); an existing
    index is never written over."""
    from ragloom.operations import restore

    where = target or ctx.obj["index_path"]
    with _progress("restore") as update:
        manifest = restore(backup_folder, where, _stepper(update))
    out.print(f"restored version {manifest.generation} of {manifest.source} as {where}")


@cli.command("export")
@where_options
@click.argument("dest")
@click.option("--collection", "-c", "collections", multiple=True, help="Only this (repeatable).")
@click.pass_context
def export_cmd(ctx: click.Context, dest: str, collections: tuple[str, ...]) -> None:
    """Write the index as JSON lines to the new file DEST ("-": standard output): documents,
    metadata, chunk ids, index terms and vectors, for `ragloom import` anywhere."""
    from ragloom.operations.jsonl import export_jsonl

    with _progress("export") as update:
        report = export_jsonl(
            ctx.obj["index_path"], dest, list(collections) or None, _stepper(update)
        )
    err.print(f"exported {report.documents} documents, {report.chunks} chunks", markup=False)


@cli.command("import")
@where_options
@click.argument("source")
@click.pass_context
def import_cmd(ctx: click.Context, source: str) -> None:
    """Add the collections of an export (SOURCE, "-": standard input) to the index; nothing
    is re-chunked or re-embedded."""
    from ragloom.operations.jsonl import import_jsonl

    with _progress("import") as update:
        report = import_jsonl(source, ctx.obj["index_path"], _stepper(update))
    out.print(
        f"imported {report.documents} documents, {report.chunks} chunks and {report.vectors}"
        f" vectors in {len(report.collections)} collection(s)"
    )


@cli.command()
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
@click.option(
    "--allow-host",
    "allowed_hosts",
    multiple=True,
    help="Another Host name to answer for besides loopback and --host (repeatable; '*': any).",
)
@click.option(
    "--allow-hardlinks",
    is_flag=True,
    help="Index files that have other hard links (refused by default: docs/untrusted-input.md).",
)
@click.option(
    "--max-file-size",
    type=ByteSize(),
    default=str(DEFAULT_MAX_FILE_SIZE // 2**20) + "M",
    show_default=True,
    help="Largest file /index reads (0: no limit).",
)
@click.option(
    "--read-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=30.0,
    show_default=True,
    help="Seconds to read one file.",
)
@click.option(
    "--index-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=600.0,
    show_default=True,
    help="Seconds one /index request may run before it is stopped.",
)
@click.option("--access-log", is_flag=True, help="Log every request.")
@click.option(
    "--rerank",
    "reranker",
    envvar="RAGLOOM_RERANKER",
    metavar="SPEC",
    help="The reranker /query's rerank=true uses (env RAGLOOM_RERANKER): onnx:FOLDER, "
    "rerank:MODEL@URL, tei:MODEL@URL, llm.",
)
@click.pass_context
def serve(
    ctx: click.Context,
    host: str,
    port: int,
    roots: tuple[str, ...],
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
    from ragloom.server.runner import serve as run_server
    from ragloom.server.settings import ServerSettings

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
    )
    run_server(settings, host=host, port=port, access_log=access_log)


@cli.command()
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
    with _open(ctx) as index:
        serve_stdio(Toolbox(index, **defaults))


MOVABLE = ("--store", "--llm")  # global options that may also follow the command


def global_options_first(args: list[str]) -> list[str]:
    """`ragloom search "q" --store URL` as `ragloom --store URL search "q"`: --store and
    --llm may follow the command (the arguments after `--` are left alone)."""
    out: list[str] = []
    moved: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            out += args[i:]
            break
        if arg in MOVABLE and i + 1 < len(args):
            moved += args[i : i + 2]
            i += 2
            continue
        if arg.startswith(tuple(f"{name}=" for name in MOVABLE)):
            moved.append(arg)
        else:
            out.append(arg)
        i += 1
    return moved + out


def main(argv: list[str] | None = None) -> None:
    """Console entry point: typed errors become a message and a non-zero exit code."""
    try:
        args = global_options_first(sys.argv[1:] if argv is None else list(argv))
        code = cli.main(args=args, prog_name="ragloom", standalone_mode=False)
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
