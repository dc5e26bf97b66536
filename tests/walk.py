"""Walk a search and a one-document write through the package, call by call.

Run `python tests/walk.py [SRC]`: it indexes a few documents into a temporary SQLite index
(with a tiny deterministic embedder defined here, so both legs run without the model), then
traces `Index.add` of one document, `Index.search` of one hybrid query, and one search with
a step (RM3 expansion, which needs no service). It counts only the package's own functions:
the calls, the distinct functions and modules visited, the calls that cross from one module
into another (and the returns that cross back), and the calls that climb against the
imports (into a module that imports the caller's), telling apart those into a function
handed down as an argument (a leg, a lookup). It prints the modules in order of first visit.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SRC = Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else HERE.parent / "src"
sys.path.insert(0, str(SRC))
sys.path.insert(0, str(HERE))

import numpy as np  # noqa: E402
from layers import read_graph  # noqa: E402

import ragloom  # noqa: E402
from ragloom.embedding.base import Embedder  # noqa: E402

PACKAGE = str(SRC / "ragloom")
NESTED = 0x10  # CO_NESTED: a function defined inside another (a closure or a lambda)


class Letters(Embedder):
    """A 26-dimensional embedder: the letter counts of a text (deterministic, no model)."""

    name = "walk-letters"
    dimension = 26

    def _embed_batch(self, texts):
        out = np.zeros((len(texts), 26), np.float32)
        for i, text in enumerate(texts):
            for ch in text.lower():
                if "a" <= ch <= "z":
                    out[i, ord(ch) - 97] += 1
        return out + 1e-3


def module_of(filename: str) -> str | None:
    if not filename.startswith(PACKAGE):
        return None
    parts = list(Path(filename).relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def trace(work: Callable[[], Any]) -> list[tuple[str, str, str | None, bool]]:
    """(event, module, function, nested) of every call and return of package code."""
    events: list[tuple[str, str, str | None, bool]] = []

    def profile(frame, event, arg):
        if event not in ("call", "return"):
            return
        module = module_of(frame.f_code.co_filename)
        if module is not None:
            nested = bool(frame.f_code.co_flags & NESTED)
            events.append((event, module, frame.f_code.co_qualname, nested))

    sys.setprofile(profile)
    try:
        work()
    finally:
        sys.setprofile(None)
    return events


def reach(edges: dict[str, set[str]]) -> dict[str, set[str]]:
    """Every module each module imports, directly or through others."""
    out: dict[str, set[str]] = {}
    for room in edges:
        seen, todo = set(), list(edges[room])
        while todo:
            nxt = todo.pop()
            if nxt not in seen:
                seen.add(nxt)
                todo.extend(edges.get(nxt, ()))
        out[room] = seen
    return out


def summary(name: str, events, below: dict[str, set[str]]) -> list[str]:
    """The walk's counts. A call climbs when the callee's module imports the caller's
    (directly or not): it runs against the imports, into code above the caller (through an
    object or a function the caller was given)."""
    stack: list[str] = []
    calls = crossings = returns = 0
    climbs: dict[tuple[str, str], int] = {}
    handed: dict[tuple[str, str], int] = {}
    functions, order, edges = set(), [], set()
    for event, module, function, nested in events:
        if event == "return":
            done = stack.pop() if stack else module
            returns += bool(stack) and stack[-1] != done
            continue
        calls += 1
        functions.add(f"{module}:{function}")
        if module not in order:
            order.append(module)
        caller = stack[-1] if stack else None
        stack.append(module)
        if caller is None or caller == module:
            continue
        crossings += 1
        edges.add((caller, module))
        if caller in below.get(module, ()):
            counts = handed if nested else climbs
            counts[(caller, module)] = counts.get((caller, module), 0) + 1
    short = [m.removeprefix("ragloom.") for m in order]
    out = [
        f"{name}: {calls} calls of {len(functions)} functions in {len(order)} modules;"
        f" {crossings} calls cross from one module into another ({len(edges)} distinct"
        f" module pairs), {returns} returns cross back",
        f"  calls that climb against the imports: {sum(climbs.values())}"
        f" ({len(climbs)} pairs), and into functions handed down: {sum(handed.values())}"
        f" ({len(handed)} pairs)",
    ]
    out += [f"    climb: {a} -> {b} x{n}" for (a, b), n in sorted(climbs.items())]
    out += [f"    handed down: {a} -> {b} x{n}" for (a, b), n in sorted(handed.items())]
    out.append("  modules in order of first visit: " + " > ".join(short))
    return out


def main() -> None:
    graph = read_graph(SRC)
    below = reach({m: set(t) for m, t in graph.imports.items()})
    texts = [
        "The silver key opens the north gate of the old city.",
        "Mira forged the silver key in the smithy by the river.",
        "The river floods every spring and the gate stays shut.",
    ]
    with tempfile.TemporaryDirectory() as folder:
        index = ragloom.Index(Path(folder) / "walk.db", embedder=Letters())
        index.add([ragloom.Document(id=f"d{i}", text=t) for i, t in enumerate(texts)])
        index.search("warm up the views and caches", top_k=2)
        doc = ragloom.Document(id="new", text="Who forged the silver key? Mira did.")
        write = trace(lambda: index.add([doc]))
        index.search("warm up again after the write", top_k=2)
        search = trace(lambda: index.search("who forged the silver key", top_k=3))
        prf = trace(lambda: index.search("who forged the key", top_k=3, expand="prf"))
        index.close()
    print("\n".join(summary("search (Index.search, hybrid)", search, below)))
    print("\n".join(summary("search with a step (expand='prf', hybrid)", prf, below)))
    print("\n".join(summary("write (Index.add, one document)", write, below)))


if __name__ == "__main__":
    main()
