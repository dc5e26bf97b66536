"""The `ragloom` group: its global options, the commands it gathers from the modules beside
it, from the evaluation code and the PostgreSQL launcher (each module imported only when its
command runs, so that a one-shot `ragloom search` loads what a search needs and no more), and
the console entry point that turns typed errors into a message and an exit status."""

from __future__ import annotations

import sys

import click

from ragloom.console import err, print_json
from ragloom.errors import RagloomError
from ragloom.version import __version__


class _Commands(click.Group):
    """Each command's module is imported when that command runs (or `--help` lists them):
    `ragloom eval` and `ragloom tune` live with the evaluation code, `ragloom postgres` with
    the local server launcher, the others in the modules beside this one."""

    lazy = {
        "index": "ragloom.cli.indexing:index_cmd",
        "search": "ragloom.cli.search_commands:search",
        "context": "ragloom.cli.search_commands:context",
        "ask": "ragloom.cli.asking:ask",
        "stats": "ragloom.cli.upkeep:stats",
        "delete": "ragloom.cli.upkeep:delete",
        "reembed": "ragloom.cli.upkeep:reembed",
        "check": "ragloom.cli.upkeep:check",
        "backup": "ragloom.cli.store_commands:backup_cmd",
        "restore": "ragloom.cli.store_commands:restore_cmd",
        "export": "ragloom.cli.store_commands:export_cmd",
        "import": "ragloom.cli.store_commands:import_cmd",
        "migrate": "ragloom.cli.store_commands:migrate",
        "add-shard": "ragloom.cli.store_commands:add_shard",
        "serve": "ragloom.cli.serving:serve",
        "mcp": "ragloom.cli.serving:mcp",
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
    help="LLM for ask, --expand llm, --hops and --rerank llm: openai:MODEL@URL or "
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
    """Console entry point: typed errors become a message and a non-zero exit code (and,
    with --json, the error envelope on stdout: ok false, error, code, hint)."""
    args: list[str] = []
    try:
        args = global_options_first(sys.argv[1:] if argv is None else list(argv))
        code = cli.main(args=args, prog_name="ragloom", standalone_mode=False)
    except click.exceptions.Abort:
        err.print("aborted")
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        if "--json" in args and isinstance(exc, click.UsageError):  # an unknown option, ...
            print_json({"ok": False, "error": exc.format_message(), "code": "bad_request"})
        sys.exit(exc.exit_code)
    except RagloomError as exc:
        click.echo(f"error: {exc.message}", err=True)
        hint = exc.hint_for("cli")
        if hint:
            click.echo(f"hint: {hint}", err=True)
        if "--json" in args:  # the same envelope as HTTP's, for programs to branch on
            print_json({"ok": False, "error": exc.message, "code": exc.code, "hint": hint})
        sys.exit(1)
    except BrokenPipeError:
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)
