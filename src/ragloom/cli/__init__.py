"""Command line: `ragloom index|search|context|stats|delete|serve|mcp|eval|...`, a package of
thin commands over the library's verbs (`ragloom.cli.app` gathers them; the search options
come from `ragloom.contract`)."""

from ragloom.cli.app import cli, global_options_first, main

__all__ = ["cli", "global_options_first", "main"]
