"""The worker process's side of `ragloom.convert.pool`: convert what comes down the pipe.

The process limits its own address space first, so a file that would take all memory
fails here (a `MemoryError`, or the process dies) instead of in the indexing process.
Answers are plain tuples: ("ok", Converted) or ("error", error class name, message, hint).
"""

from __future__ import annotations

import os
import resource
from importlib import import_module
from multiprocessing.connection import Connection
from typing import Any

from ragloom.convert.formats import FORMATS, convert_bytes, converter
from ragloom.errors import RagloomError


def _limit_memory(limit: int) -> None:
    if limit <= 0:
        return
    try:
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        cap = limit if hard == resource.RLIM_INFINITY else min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    except (ValueError, OSError):  # not allowed here: the time limit still holds
        pass


def answer(fmt: str, data: bytes, name: str) -> tuple[Any, ...]:
    """One conversion's answer, whatever happens inside the converter."""
    try:
        return ("ok", convert_bytes(fmt, data, name))
    except RagloomError as exc:
        return ("error", type(exc).__name__, exc.message, exc.hint)
    except MemoryError:
        return ("error", "DocumentError", f"{name} needs more memory to convert than allowed", None)
    except RecursionError:
        return ("error", "DocumentError", f"{name} is nested too deeply to convert", None)
    except Exception as exc:  # a converter's own failure on a malformed file
        reason = f"{type(exc).__name__}: {exc}"[:300]
        return ("error", "DocumentError", f"{name} could not be converted ({reason})", None)


def _preload() -> None:
    """Import every converter's libraries before the first request (a worker is started
    ahead of need, so this overlaps the indexing process's own work)."""
    for fmt in FORMATS:
        try:
            converter(fmt)
        except ImportError:  # a converter whose library is missing fails when asked
            continue
    for module in ("pypdfium2", "trafilatura", "docx", "pptx", "lxml.html", "defusedxml"):
        try:
            import_module(module)
        except ImportError:
            continue


def serve(requests: Any, answers: Any, memory: int) -> None:
    """Answer conversion requests until the pipe closes (or a None arrives)."""
    _limit_memory(memory)
    _preload()
    while True:
        try:
            request = requests.recv()
        except (EOFError, OSError):
            return
        if request is None:
            return
        answers.send(answer(*request))


def serve_stdio(memory: int) -> None:
    """`serve` over standard input and output; what a library prints goes nowhere."""
    answers = Connection(os.dup(1), readable=False)
    quiet = os.open(os.devnull, os.O_WRONLY)
    os.dup2(quiet, 1)
    serve(Connection(os.dup(0), writable=False), answers, memory)
