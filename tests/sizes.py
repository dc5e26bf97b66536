"""Module and function sizes of the package (used by tests/test_layers.py).

Run `python tests/sizes.py [SRC] [--all]` to print the modules over 300 lines and the
functions over 60, largest first (every one of them with --all).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
MODULE_LIMIT = 400
FUNCTION_LIMIT = 80
# Nothing is exempt: a module or function over its limit fails tests/test_layers.py.
EXEMPT: set[str] = set()
EXEMPT_FUNCTIONS: set[str] = set()


def module_sizes(src: Path = SRC) -> dict[str, int]:
    """Lines of every module, by its path under `src`."""
    return {
        str(path.relative_to(src)): len(path.read_text(encoding="utf-8").splitlines())
        for path in sorted((src / "ragloom").rglob("*.py"))
    }


def function_sizes(src: Path = SRC) -> dict[str, int]:
    """Lines of every function and method (decorators and docstring included), by
    `path:Class.name`; a nested function counts inside its enclosing one and on its own."""
    out: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                out[f"{prefix}{child.name}"] = child.end_lineno - first + 1
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")

    for path in sorted((src / "ragloom").rglob("*.py")):
        visit(ast.parse(path.read_text(encoding="utf-8")), f"{path.relative_to(src)}:")
    return out


def table(sizes: dict[str, int], floor: int) -> list[str]:
    rows = sorted(((n, name) for name, n in sizes.items() if n > floor), reverse=True)
    return [f"  {n:5d}  {name}" for n, name in rows]


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    src = Path(args[0]) if args else SRC
    every = "--all" in sys.argv
    modules, functions = module_sizes(src), function_sizes(src)
    print(f"modules: {len(modules)}, lines: {sum(modules.values())}")
    print(f"modules over {0 if every else 300} lines (limit {MODULE_LIMIT}):")
    print("\n".join(table(modules, 0 if every else 300)))
    print(f"functions over {0 if every else 60} lines (limit {FUNCTION_LIMIT}):")
    print("\n".join(table(functions, 0 if every else 60)))
