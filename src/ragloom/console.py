"""What the command line prints with: rich consoles on stdout and stderr, JSON, the index summary.
Bars and tables are in `console_widgets`."""

from __future__ import annotations

import json
from typing import Any

import click
from rich.console import Console

err = Console(stderr=True)
out = Console(highlight=False, soft_wrap=True)


def report_line(report: Any) -> str:
    """The summary `ragloom index` prints, with the embedding time when it embedded."""
    line = (
        f"indexed {report.documents} document(s), {report.chunks} chunk(s) from "
        f"{report.files} file(s); {report.unchanged} unchanged, {len(report.skipped)} skipped"
    )
    if report.failed:
        line += f", {len(report.failed)} failed"
    if report.removed:
        line += f", {report.removed} removed (gone from the folder)"
    if report.left_out:
        line += f"; {len(report.left_out)} left out by rules"
    if report.fragments:
        line += f"; {report.fragments} fragment(s) under --min-chunk dropped"
    if report.embedded:
        seconds = report.embedding_seconds
        rate = report.embedded / seconds if seconds else 0.0
        line += (
            f"; embedded {report.embedded} passage(s) in {seconds:.1f} s ({rate:.1f} passages/s)"
        )
    return line


def print_json(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=2))
