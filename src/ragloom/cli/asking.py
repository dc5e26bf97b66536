"""`ragloom ask`: the model's answer from the index's passages, printed as it arrives, then
the passages it cites; `--json` prints the whole result instead. Its options are `search`'s
(`ragloom.contract`) and the answer's own (`ragloom.contract.ask_options`)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import click

from ragloom.answer import AskResult
from ragloom.cli.common import open_index, where_options
from ragloom.cli.search_commands import retrieval_options, search_kwargs
from ragloom.console import err, print_json
from ragloom.contract.cli import keywords
from ragloom.contract.cli import options as contract_options
from ragloom.contract.options import ARGUMENTS
from ragloom.contract.schema import check_value
from ragloom.errors import InputError

ANSWER_OPTIONS = ("budget", "max_rounds", "min_relevance", "max_tokens", "show_prompt")


def read_history(path: str | None) -> list[Any] | None:
    """The conversation so far from a JSON file: a list of {"role", "content"} turns."""
    if path is None:
        return None
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"--history: {path} not found") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise InputError(
            f"--history: cannot read {path} ({exc})",
            'write a JSON list such as [{"role": "user", "content": "..."}]',
        ) from None
    return data


def shown_path(source: str | None) -> str | None:
    """A source under the current folder as a path relative to it."""
    if not source or not os.path.isabs(source):
        return source
    relative = os.path.relpath(source)
    return source if relative.startswith("..") else relative


def where(passage: dict[str, Any]) -> str:
    """A passage's place: source (or document), page (slide, cell), title, section, span."""
    parts = [shown_path(passage.get("source")) or passage["document_id"]]
    if passage.get("place"):
        parts.append(passage["place"])
    if passage.get("title"):
        parts.append(f'"{passage["title"]}"')
    if passage.get("section"):
        parts.append(f"section {passage['section']}")
    parts.append(f"chars {passage['start']}-{passage['end']}")
    return " · ".join(parts)


def print_sources(result: AskResult) -> None:
    """After the answer: the passages it cites (or, without citations, those it was given)."""
    cited = {c["n"] for c in result.citations}
    shown = [p for p in result.passages if p["number"] in cited] or result.passages
    if not shown:
        return
    heading = "Sources" if cited else "Nearest passages" if result.abstained else "Passages"
    click.echo(f"\n{heading}:")
    for passage in shown:
        click.echo(f"  [{passage['number']}] {where(passage)}")


def print_notes(result: AskResult) -> None:
    if result.degraded:
        err.print(f"warning: {result.reason}", highlight=False, markup=False)
    if result.invalid_citations:
        numbers = ", ".join(f"[{n}]" for n in result.invalid_citations)
        err.print(
            f"note: the model cited {numbers}, which named no passage it was given: taken out",
            highlight=False,
            markup=False,
        )


@click.command()
@where_options
@click.argument("question")
@retrieval_options
@contract_options(ANSWER_OPTIONS)
@click.option(
    "--template",
    type=click.Path(dir_okay=False),
    help=ARGUMENTS["template"].description,
)
@click.option(
    "--history",
    type=click.Path(dir_okay=False),
    help='The conversation so far: a JSON file holding [{"role": "user" or "assistant",'
    ' "content": "..."}, ...], oldest first; the question is rewritten into a standalone'
    " search query by the model.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the whole result as JSON.")
@click.pass_context
def ask(ctx: click.Context, question: str, as_json: bool, **p: Any) -> None:
    """Answer a question from the index's passages with the model (--llm), citing them."""
    check_value(ARGUMENTS["question"], question, "cli")
    kwargs = search_kwargs(p)
    options = keywords(ANSWER_OPTIONS, p)
    strict = bool(kwargs.pop("strict", False))
    history = read_history(p["history"])
    with open_index(ctx) as index:
        events = index.ask_stream(
            question,
            collection=p["collection"],
            top_k=p["top_k"],
            template=p["template"],
            history=history,
            strict=strict,
            **options,
            **kwargs,
        )
        result = None
        for event in events:
            if isinstance(event, AskResult):
                result = event
            elif not as_json:
                sys.stdout.write(event)
                sys.stdout.flush()
    assert result is not None
    if as_json:
        print_json({"ok": True, **result.to_dict()})
        return
    if result.answer:
        click.echo()
    if result.prompt is not None:
        click.echo("\nPrompt sent:")
        for message in result.prompt:
            click.echo(f"--- {message['role']}\n{message['content']}")
    print_sources(result)
    print_notes(result)
