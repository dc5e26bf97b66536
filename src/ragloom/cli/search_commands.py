"""`ragloom search` and `ragloom context`: thin commands over `Index.search` and
`Index.context`, their options derived from `ragloom.contract`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click
from rich.markup import escape

from ragloom.cli.common import collection_option, open_index, pairs, where_options
from ragloom.cli.explaining import found_by, print_explain, print_steps
from ragloom.compiled import serve_without_loading
from ragloom.console import err, out, print_json
from ragloom.contract.cli import keywords
from ragloom.contract.cli import options as contract_options
from ragloom.contract.options import ARGUMENTS, offered
from ragloom.contract.schema import check_value

# The declared options (`ragloom.contract`) both commands take, and those only `search` takes.
SHARED = tuple(o.name for o in offered("cli") if o.name not in ("explain", "tokens"))
SEARCH_ONLY = ("explain", "tokens")


def retrieval_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """The options shared by `search` and `context`: the declared ones, then those of the
    command line's own spelling (--max-per KEY=N, --mmr, BM25's --k1 and --b, --rerank SPEC)."""
    extra = [
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
        click.option("--k1", type=float, help="BM25 k1 (default: the collection's)."),
        click.option("--b", "b", type=float, help="BM25 b (default: the collection's)."),
        click.option(
            "--rerank",
            metavar="SPEC",
            help="Rerank with onnx:FOLDER, rerank:MODEL@URL (cohere/jina/vllm/infinity), "
            "tei:MODEL@URL, llm or llm:pointwise.",
        ),
    ]
    for option in reversed(extra):
        command = option(command)
    return collection_option(contract_options(SHARED)(command))


def search_kwargs(p: dict[str, Any], names: tuple[str, ...] = SHARED) -> dict[str, Any]:
    """`Index.search` keywords from a command's parameters: the declared options given
    (checked against the declaration) and the command line's own spellings."""
    kwargs = keywords(names, p)
    kwargs.pop("top_k", None)
    diversity: dict[str, Any] = {}
    if p["max_per"]:
        diversity["max_per"] = pairs(p["max_per"], "--max-per", int)
        diversity["missing"] = p["max_per_missing"]
    if p["mmr"] is not None:
        diversity["mmr"] = {"lambda": p["mmr"]}
    if diversity:
        kwargs["diversity"] = diversity
    if p["rerank"]:
        kwargs["rerank"] = p["rerank"]
    # Only what was given: the search fills the rest from the collection's own settings
    # (asking `configure` for them created a missing collection: reads never write).
    bm25 = {name: p[name] for name in ("k1", "b") if p[name] is not None}
    if bm25:
        kwargs["bm25"] = bm25
    return kwargs


@click.command()
@where_options
@click.argument("query")
@retrieval_options
@contract_options(SEARCH_ONLY)
@click.option("--json", "as_json", is_flag=True, help="Print hits as JSON.")
@click.pass_context
def search(
    ctx: click.Context, query: str, explain: bool, tokens: bool, as_json: bool, **p: Any
) -> None:
    """Search the index and print the best chunks."""
    serve_without_loading()  # one question, then exit: numpy's paths beat loading the kernels
    kwargs = search_kwargs({**p, "explain": explain, "tokens": tokens}, SHARED + SEARCH_ONLY)
    with open_index(ctx) as index:
        hits = index.search(query, top_k=p["top_k"], collection=p["collection"], **kwargs)
    if as_json:
        print_json({"ok": True, "query": query, **hits.to_dict()})
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
    print_steps(hits)
    if not hits:
        out.print("no results")
        return
    legs = "lexical + dense" if hits.mode == "hybrid" else hits.mode
    out.print(f"[dim]{hits.mode} search ({legs}), {len(hits)} hit(s)[/]")
    for hit in hits:
        heading = f"[bold]{hit.rank}.[/] {escape(hit.document_id)}  [dim]{escape(hit.chunk_id)} "
        heading += f"{hit.place}  " if hit.place else ""
        heading += f"chars {hit.start}-{hit.end}  score {hit.score:.3f}  {found_by(hit)}[/]"
        out.print(heading)
        if hit.explain:
            print_explain(hit.explain)
        out.print(hit.text.strip(), markup=False)
        out.print()


@click.command()
@where_options
@click.argument("query")
@retrieval_options
@contract_options(("budget",))
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
    serve_without_loading()
    kwargs = search_kwargs(p)
    if budget is not None:
        check_value(ARGUMENTS["budget"], budget, "cli")
    with open_index(ctx) as index:
        packed = index.context(
            query,
            p["collection"],
            p["top_k"],
            collections=requests or None,
            budget=budget,
            instruction=None if no_instruction else GROUNDING_INSTRUCTION,
            **kwargs,
        )
    if as_json:
        print_json({"ok": True, "query": query, **packed.to_dict()})
        return
    out.print(packed.text, markup=False, highlight=False)
    err.print(
        f"{packed.tokens} tokens, {len(packed.passages)} passage(s)"
        + (f", {packed.omitted} left out for the budget" if packed.omitted else ""),
        highlight=False,
    )
