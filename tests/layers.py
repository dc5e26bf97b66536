"""The package's layers, derived from its own imports (used by tests/test_layers.py).

A *room* is a top-level part of `ragloom`: a subpackage (`store`, `retrieval`, ...) or a
top-level module (`index`, `cli`, ...); the package root `ragloom/__init__.py` is the room
`ragloom`. Every `import` statement counts, wherever it stands (inside a function, under
`TYPE_CHECKING`): a lazy import is still a dependency; so does a string that names a module
and one of its attributes (`"ragloom.evaluation.commands:eval_cmd"`), which code imports by
name. An import of a package's parent
(`import ragloom.store.base` runs `ragloom/__init__.py`) is not counted as one.

A room's floor is one above the highest room it imports, so every import points down exactly
when the rooms form no circle. Run `python tests/layers.py [SRC]` to print the floors, the
imports that point up (those inside a circle of rooms) and the circles of modules, and
`python tests/layers.py --markdown` for the floor table docs/architecture.md shows.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
ROOT = "ragloom"
# A module named in a string, to be imported by name ("ragloom.store.postgres:open_postgres").
NAMED = re.compile(r"^(ragloom(\.\w+)+):\w+$")


@dataclass
class Graph:
    """Modules and the imports between them (module -> module -> line numbers), and which
    of them are lazy (inside a function or a class, under TYPE_CHECKING, or by name)."""

    modules: dict[str, Path]
    imports: dict[str, dict[str, list[int]]] = field(default_factory=dict)
    lazy: dict[str, dict[str, list[int]]] = field(default_factory=dict)

    def room(self, module: str) -> str:
        parts = module.split(".")
        return parts[1] if len(parts) > 1 else ROOT

    def room_imports(self) -> dict[str, dict[str, list[tuple[str, str, int]]]]:
        """room -> imported room -> the (module, imported module, line) behind the arrow."""
        out: dict[str, dict[str, list[tuple[str, str, int]]]] = {}
        for source, targets in self.imports.items():
            out.setdefault(self.room(source), {})
            for target, lines in targets.items():
                a, b = self.room(source), self.room(target)
                if a != b:
                    out[a].setdefault(b, []).extend((source, target, n) for n in lines)
        return out


def _module_name(path: Path, src: Path) -> str:
    parts = list(path.relative_to(src).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The module `name` names, or the nearest enclosing one that exists."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _imported(node: ast.AST, module: str, is_package: bool, modules: dict[str, Path]):
    """The package modules one import statement names (or one string naming a module to
    import by name, as lazy command tables and store registries do)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        named = NAMED.match(node.value)
        if named and named.group(1) in modules:
            yield named.group(1)
        return
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.name == ROOT or alias.name.startswith(ROOT + "."):
                yield _resolve(alias.name, modules)
        return
    if not isinstance(node, ast.ImportFrom):
        return
    base = node.module or ""
    if node.level:
        package = module if is_package else module.rpartition(".")[0]
        for _ in range(node.level - 1):
            package = package.rpartition(".")[0]
        base = f"{package}.{base}" if base else package
    if base != ROOT and not base.startswith(ROOT + "."):
        return
    for alias in node.names:
        submodule = f"{base}.{alias.name}"
        yield submodule if submodule in modules else _resolve(base, modules)


def _eager(tree: ast.Module) -> set[int]:
    """The import statements that run when the module is imported: at its top level, in
    blocks of the top level (if, try, with), but not under `if TYPE_CHECKING:`."""
    found: set[int] = set()
    blocks: list[list[ast.stmt]] = [tree.body]
    while blocks:
        for node in blocks.pop():
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                found.add(id(node))
            elif isinstance(node, ast.If):
                if "TYPE_CHECKING" not in ast.unparse(node.test):
                    blocks.append(node.body)
                blocks.append(node.orelse)
            elif isinstance(node, ast.Try):
                blocks += [node.body, node.orelse, node.finalbody]
                blocks += [handler.body for handler in node.handlers]
            elif isinstance(node, ast.With):
                blocks.append(node.body)
    return found


def read_graph(src: Path = SRC) -> Graph:
    """Every module under `src/ragloom` and every import between them."""
    files = sorted((src / ROOT).rglob("*.py"))
    modules = {_module_name(f, src): f for f in files}
    graph = Graph(modules)
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        eager = _eager(tree)
        targets = graph.imports.setdefault(module, {})
        lazy = graph.lazy.setdefault(module, {})
        for node in ast.walk(tree):
            for target in _imported(node, module, path.name == "__init__.py", modules):
                if target and target != module:
                    for table in (targets, lazy) if id(node) not in eager else (targets,):
                        lines = table.setdefault(target, [])
                        if node.lineno not in lines:
                            lines.append(node.lineno)
    return graph


def lazy_upward(graph: Graph) -> list[str]:
    """The lazy imports that point up: those from a room into another that alone put the
    importer above it (without them the imported room would stand on the importer's floor
    or above). A lazy import may put off an import's cost (an optional extra, a command's
    start-up) where the rest of the code already stands above what it imports, never hide
    a dependency that runs the other way. The package root, above every room by design,
    keeps `import ragloom` light with lazy names."""
    rooms: dict[str, set[str]] = {graph.room(m): set() for m in graph.modules}
    only_lazy: dict[tuple[str, str], list[tuple[str, str, int]]] = {}
    eager_pairs: set[tuple[str, str]] = set()
    for source, targets in graph.imports.items():
        for target, lines in targets.items():
            pair = (graph.room(source), graph.room(target))
            if pair[0] == pair[1]:
                continue
            rooms[pair[0]].add(pair[1])
            lazy = graph.lazy.get(source, {}).get(target, [])
            if set(lines) - set(lazy):
                eager_pairs.add(pair)
            only_lazy.setdefault(pair, []).extend((source, target, n) for n in lazy)
    found = []
    for (low, high), items in sorted(only_lazy.items()):
        if (low, high) in eager_pairs or low == ROOT or not items:
            continue
        without = {
            room: targets - {high} if room == low else targets for room, targets in rooms.items()
        }
        floor_of = floors(without)
        if floor_of[high] >= floor_of[low]:
            found += [
                f"{a} -> {b} (line {n}): floor {floor_of[low]} -> {floor_of[high]}"
                for a, b, n in items
            ]
    return found


def circles(edges: dict[str, Iterable[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in edges.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(max(10_000, sys.getrecursionlimit()))
    for node in sorted(edges):
        if node not in index:
            visit(node)
    return sorted(found)


def floors(edges: dict[str, Iterable[str]]) -> dict[str, int]:
    """Floor of each node: 1 + the highest floor it imports (nodes of one circle share a
    floor, as one node of the condensed graph)."""
    component_of = {n: n for n in edges}
    for circle in circles(edges):
        for node in circle:
            component_of[node] = circle[0]
    condensed: dict[str, set[str]] = {}
    for node, targets in edges.items():
        mine = component_of[node]
        condensed.setdefault(mine, set())
        condensed[mine].update(component_of[t] for t in targets if component_of[t] != mine)
    memo: dict[str, int] = {}

    def floor(node: str) -> int:
        if node not in memo:
            memo[node] = 1 + max((floor(t) for t in condensed.get(node, ())), default=0)
        return memo[node]

    return {n: floor(component_of[n]) for n in edges}


@dataclass
class Report:
    """What the layer test checks, and prints."""

    floors: dict[str, int]  # room -> floor
    room_circles: list[list[str]]
    upward: list[tuple[str, str, int]]  # (module, imported module, line) inside a room circle
    module_circles: list[list[str]]

    @property
    def upward_arrows(self) -> list[tuple[str, str]]:
        """Room -> room arrows inside a circle of rooms."""
        room = Graph({}).room
        return sorted({(room(a), room(b)) for a, b, _ in self.upward})

    def lines(self) -> list[str]:
        out = ["layers, top floor first (a room imports only rooms on lower floors):"]
        for level in sorted(set(self.floors.values()), reverse=True):
            rooms = sorted(r for r, f in self.floors.items() if f == level)
            out.append(f"  floor {level:2d}: {', '.join(rooms)}")
        out.append(f"circles of rooms: {len(self.room_circles)}")
        out.extend(f"  {' <-> '.join(c)}" for c in self.room_circles)
        arrows = self.upward_arrows
        out.append(f"arrows between rooms of one circle (each circle points up): {len(arrows)}")
        out.extend(f"  {a} -> {b}" for a, b in arrows)
        out.append(f"import statements behind them: {len(self.upward)}")
        out.extend(f"  {a} -> {b} (line {n})" for a, b, n in self.upward)
        out.append(f"circles of modules: {len(self.module_circles)}")
        out.extend(f"  {' <-> '.join(c)}" for c in self.module_circles)
        return out


def report(src: Path = SRC) -> Report:
    graph = read_graph(src)
    rooms = graph.room_imports()
    room_edges = {r: set(targets) for r, targets in rooms.items()}
    room_circles = circles(room_edges)
    in_circle = {r: i for i, c in enumerate(room_circles) for r in c}
    upward = sorted(
        item
        for room, targets in rooms.items()
        for target, items in targets.items()
        if room in in_circle and in_circle.get(target) == in_circle[room]
        for item in items
    )
    module_edges = {m: set(t) for m, t in graph.imports.items()}
    return Report(floors(room_edges), room_circles, upward, circles(module_edges))


def floor_table(found: Report) -> list[str]:
    """The floors as docs/architecture.md shows them: a Markdown table, top floor first, each
    room by its module name (the package root as `ragloom`)."""
    out = ["| floor | rooms |", "|---|---|"]
    for level in sorted(set(found.floors.values()), reverse=True):
        rooms = sorted(r for r, f in found.floors.items() if f == level)
        names = ", ".join(f"`{ROOT if r == ROOT else f'{ROOT}.{r}'}`" for r in rooms)
        out.append(f"| {level} | {names} |")
    return out


if __name__ == "__main__":
    arguments = [a for a in sys.argv[1:] if a != "--markdown"]
    found = report(Path(arguments[0]) if arguments else SRC)
    print("\n".join(floor_table(found) if "--markdown" in sys.argv else found.lines()))
