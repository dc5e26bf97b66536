"""`ragloom eval` and `ragloom tune`: score and tune retrieval on BEIR-layout collections."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from ragloom.command_options import embedder_after
from ragloom.config import CollectionConfig
from ragloom.console import err, out, print_json
from ragloom.console_widgets import print_table, progress
from ragloom.errors import NotFound
from ragloom.evaluation.beir import load_beir
from ragloom.evaluation.leg_cache import LegCache
from ragloom.evaluation.metrics import judged_queries
from ragloom.evaluation.prepare import prepared_index
from ragloom.evaluation.runner import EVAL_COLLECTION, whole_document_config
from ragloom.evaluation.suite import METRICS, Scorer, SuiteResult, parse_modes, run_suite
from ragloom.evaluation.tune import Tuner, TuneResult, compare, holdout_split, search_settings
from ragloom.index import Index


def dataset_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Options shared by `eval` and `tune`: how the corpus is indexed and where it is kept."""
    options = [
        click.argument("folder", type=click.Path(file_okay=False)),
        click.option("--k1", type=float, default=0.9, show_default=True),
        click.option("--b", "b", type=float, default=0.4, show_default=True),
        click.option(
            "--chunk-size",
            type=click.IntRange(min=0),
            default=0,
            show_default=True,
            help="Chunk documents (0: each document whole, the BEIR convention).",
        ),
        click.option("--split-identifiers", is_flag=True, help="Identifier-aware tokens (code)."),
        click.option(
            "--keep-self-hits",
            is_flag=True,
            help="Keep hits whose document id equals the query id (ignored by default).",
        ),
        click.option(
            "--index",
            "eval_index",
            type=click.Path(dir_okay=False),
            help="Keep the built (embedded) index in this file and reuse it on later runs.",
        ),
        click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def _config(p: dict[str, Any]) -> CollectionConfig:
    """The eval collection's config from the shared options."""
    k1, b, chunk_size, split_identifiers = p["k1"], p["b"], p["chunk_size"], p["split_identifiers"]
    chunking = {
        "max_chars": chunk_size,
        "overlap": 0 if chunk_size == 0 else min(80, chunk_size // 5),
    }
    return whole_document_config(
        bm25={"k1": k1, "b": b},
        chunking=chunking,
        tokenizer={"split_identifiers": split_identifiers},
    )


def _embedder(ctx: click.Context) -> str:
    """The model for dense legs: the --embedder given, the local model for auto/none."""
    spec = ctx.obj["embedder"]
    return "local" if spec in ("auto", "none") else spec


def _reporter(update: Callable[[int, int], None]) -> Callable[[str, int, int], None]:
    indexed = 0

    def report(stage: str, done: int, total: int) -> None:
        nonlocal indexed
        if stage == "index":
            indexed += done
            update(indexed, 0)
        else:
            update(done, total)

    return report


def _metric(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def print_suite(result: SuiteResult) -> None:
    """The metrics table of an `eval` run."""
    built = "reused" if result.reused else f"built in {result.build_seconds:.1f} s"
    expanded = f", lexical leg with {result.expand.upper()}" if result.expand else ""
    rows = []
    for scored in result.scored:
        name = scored.setting.name + (" (default)" if scored.setting.default else "")
        cost = "-" if scored.ms_per_query is None else f"{scored.ms_per_query:.2f}"
        rows.append((name, *(_metric(scored.metrics.get(m)) for m in METRICS), cost))
    print_table(
        f"{result.dataset}{expanded} ({result.split}, {result.queries} queries, "
        f"{result.documents} documents; index {built}; {result.total_seconds:.1f} s in all)",
        ("setting", "nDCG@10", "Recall@100", "MRR@10", "search ms/query"),
        rows,
        figures=True,
    )


@click.command("eval")
@embedder_after
@dataset_options
@click.option("--split", default="test", show_default=True, help="Which qrels/<split>.tsv.")
@click.option(
    "--modes",
    default="lexical",
    show_default=True,
    help="Comma-separated lexical, dense, hybrid (every fusion method), or all. Dense and "
    "hybrid embed the corpus once with --embedder.",
)
@click.option("--mode", "single_mode", hidden=True, help="Old spelling of --modes.")
@click.option(
    "--report",
    "report_path",
    type=click.Path(dir_okay=False),
    help="Write a self-contained HTML page with the table and plots (needs ragloom[report]).",
)
@click.option(
    "--expand",
    type=click.Choice(["prf"]),
    help="prf: every setting with RM3 pseudo-relevance feedback on the lexical leg.",
)
@click.pass_context
def eval_cmd(
    ctx: click.Context,
    split: str,
    modes: str,
    single_mode: str | None,
    report_path: str | None,
    expand: str | None,
    **p: Any,
) -> None:
    """Score retrieval on a BEIR-layout collection (corpus.jsonl, queries.jsonl, qrels/):
    every mode and fusion method asked for, from one index and one pass over the queries."""
    wanted = parse_modes(single_mode or modes)
    if report_path:
        from ragloom.evaluation.report import _pyplot

        _pyplot()  # fail before minutes of embedding when matplotlib is missing
    with progress("indexing, then searching") as update:
        result = run_suite(
            p["folder"],
            split,
            wanted,
            _config(p),
            _embedder(ctx),
            p["eval_index"],
            p["keep_self_hits"],
            sweep=bool(report_path),
            on_progress=_reporter(update),
            expand=expand,
        )
    if report_path:
        from ragloom.evaluation.report import write_report

        err.print(f"report written to {write_report(result, report_path)}", highlight=False)
    if p["as_json"]:
        print_json({"ok": True, **result.to_dict()})
        return
    print_suite(result)


def print_tune(result: TuneResult, seconds: float) -> None:
    print_table(
        f"{result.dataset}: tuned on {result.train_queries} training queries, "
        f"tested on {result.test_queries} ({result.trials} settings tried in {seconds:.0f} s)",
        ("setting", "train nDCG@10", "test nDCG@10", "test Recall@100", "test MRR@10"),
        (
            (
                row.name,
                _metric(row.train.get("ndcg@10")),
                *(_metric(row.test.get(m)) for m in METRICS),
            )
            for row in result.rows
        ),
        figures=True,
    )
    out.print(f"chosen: {json.dumps(result.chosen)}", markup=False)
    if result.applied_to:
        out.print(f"written to {result.applied_to}: searches there use it by default")


def _tune_target(ctx: click.Context, apply_to: str | None) -> Path | None:
    """The index whose collection `--apply` names (checked before any work), or None."""
    if apply_to is None:
        return None
    target = Path(ctx.obj["index_path"])
    with Index(target, create=False, embedder=None) as index:
        if apply_to not in index.collections():
            raise NotFound(
                f"no collection {apply_to!r} in {target}",
                "name a collection of the index given with --index before `tune`",
            )
    return target


@click.command("tune")
@embedder_after
@dataset_options
@click.option(
    "--train", "train_split", default="train", show_default=True, help="Split to tune on."
)
@click.option("--test", "test_split", default="test", show_default=True, help="Split to report on.")
@click.option(
    "--holdout",
    type=float,
    help="Tune and test on one split (--test): this share of its queries, chosen by a hash of "
    "their ids, is held out for testing.",
)
@click.option(
    "--apply",
    "apply_to",
    metavar="COLLECTION",
    help="Write the chosen setting into this collection of the index (--index before the "
    "command): its searches then use it unless they say otherwise.",
)
@click.pass_context
def tune_cmd(
    ctx: click.Context,
    train_split: str,
    test_split: str,
    holdout: float | None,
    apply_to: str | None,
    **p: Any,
) -> None:
    """Choose hybrid fusion settings (method, weights, rrf_k, candidates, dense-only floor) on
    one split of judged queries and report them on another, next to the defaults."""
    started = time.perf_counter()
    if holdout is not None:
        train, test = holdout_split(load_beir(p["folder"], test_split), holdout)
    else:
        train, test = load_beir(p["folder"], train_split), load_beir(p["folder"], test_split)
    target = _tune_target(ctx, apply_to)
    config = _config(p)
    with (
        progress("indexing, searching, tuning") as update,
        prepared_index(
            train, config, _embedder(ctx), p["eval_index"], _reporter(update)
        ) as prepared,
    ):
        index = prepared.index
        cache = LegCache(index, EVAL_COLLECTION, dense=True)
        queries = list(dict.fromkeys([*train.queries.values(), *test.queries.values()]))
        done = 0

        def query_done() -> None:
            nonlocal done
            done += 1
            update(done, len(queries))

        cache.warm(queries, query_done)
        rows = index.chunk_documents(EVAL_COLLECTION)
        train_scorer = Scorer(train, cache, rows, p["keep_self_hits"])
        test_scorer = Scorer(test, cache, rows, p["keep_self_hits"])
        tuner = Tuner(train_scorer, on_trial=lambda n: update(n, 0))
        chosen = tuner.run()
        comparison = compare(train_scorer, test_scorer, chosen)
    settings = search_settings(chosen)
    result = TuneResult(
        dataset=train.name,
        train_queries=len(judged_queries(train.qrels)),
        test_queries=len(judged_queries(test.qrels)),
        trials=len(tuner.trials),
        chosen=settings,
        rows=comparison,
    )
    if target is not None and apply_to is not None:
        with Index(target, create=False, embedder=None) as index:
            index.configure(apply_to, search=settings)
        result.applied_to = f"collection {apply_to!r} of {target}"
    if p["as_json"]:
        print_json({"ok": True, **result.to_dict()})
        return
    print_tune(result, time.perf_counter() - started)
