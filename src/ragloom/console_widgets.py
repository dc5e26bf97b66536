"""What the long-running and reporting commands print with beyond plain lines: progress bars,
spinners and tables. Rich's heavier parts live here so that a one-shot search never imports them."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text

from ragloom.console import err, out
from ragloom.embedding.progress import EmbeddingMeter, measure_embedding


def embedding_status(meter: EmbeddingMeter) -> str:
    """The embedding rate shown beside the bar."""
    return f"{meter.rate:.1f} passages/s" if meter.passages else ""


def expected_passages(queued: int, files_done: int, files_total: int) -> int:
    """Passages the whole job will embed: those queued so far, scaled up by the share of
    files still unread (indexing reads, chunks and embeds in batches as it goes)."""
    if 0 < files_done < files_total:
        return max(queued, round(queued * files_total / files_done))
    return queued


class _TimeLeft(TimeRemainingColumn):
    """Time remaining, shown for the embedding bar only (reading files is not the wait)."""

    def render(self, task: Any) -> Text:
        if not task.fields.get("eta"):
            return Text("")
        return Text(f"{super().render(task).plain} left,", style="progress.remaining")


@contextmanager
def progress(label: str) -> Iterator[Callable[[int, int], None]]:
    """Progress bars on stderr (hidden when stderr is not a terminal): files (or documents)
    done, and while embedding the passages embedded, passages/s and time remaining."""
    with Progress(
        TextColumn("{task.description:>9}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[unit]} {task.fields[rate]}"),
        _TimeLeft(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
        disable=not err.is_terminal,
    ) as bar:
        task = bar.add_task(label, total=None, unit="", rate="")
        files = [0, 0]
        embedding: list[Any] = []

        def update(done: int, total: int) -> None:
            files[:] = [done, total]
            bar.update(task, completed=done, total=total or None)

        def on_update(meter: EmbeddingMeter) -> None:
            if not embedding:
                embedding.append(
                    bar.add_task("embedding", total=None, unit="passages", rate="", eta=True)
                )
            bar.update(
                embedding[0],
                completed=meter.passages,
                total=expected_passages(meter.queued, *files),
                rate=embedding_status(meter),
            )

        with measure_embedding(on_update):
            yield update


@contextmanager
def steps_progress(label: str) -> Iterator[Callable[[int, str], None]]:
    """A spinner on stderr for work counted in steps of unknown number (merges, graphs):
    the steps done and what the last one did (hidden when stderr is not a terminal)."""
    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}: {task.completed} step(s), {task.fields[what]}"),
        TimeElapsedColumn(),
        console=err,
        transient=True,
        disable=not err.is_terminal,
    ) as bar:
        task = bar.add_task(label, total=None, what="looking for pending work")

        def update(done: int, what: str) -> None:
            bar.update(task, completed=done, what=what)

        yield update


def print_table(
    title: str, columns: Sequence[str], rows: Iterable[Sequence[str]], figures: bool = False
) -> None:
    """Print a table of text cells; `figures`: every column after the first holds numbers,
    aligned right."""
    table = Table(title=title)
    for n, column in enumerate(columns):
        table.add_column(column, justify="right" if figures and n else "left")
    for row in rows:
        table.add_row(*row)
    out.print(table)
