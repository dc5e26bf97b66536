"""docs/architecture.md is the map of the code: it names every package and top-level module,
everything it names exists, it lists every command, and nothing in the repository points to
a document outside it."""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import click

from ragloom.cli import cli

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
MAP = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
TICKED = re.findall(r"`([^`\n]+)`", MAP)


def _modules() -> dict[str, Path]:
    out = {}
    for path in (SRC / "ragloom").rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = _modules()


@cache
def _names(module: str) -> dict[str, set[str]]:
    """Top-level names a module defines or imports, each with its members (for classes)."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    names: dict[str, set[str]] = {}
    body = list(tree.body)
    body += [n for node in tree.body if isinstance(node, ast.If) for n in node.body]
    for node in body:
        if isinstance(node, ast.ClassDef):
            names[node.name] = {
                n.name if not isinstance(n, ast.AnnAssign) else n.target.id  # type: ignore[union-attr]
                for n in node.body
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                or (isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name))
            }
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names[node.name] = set()
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update({(a.asname or a.name).split(".")[0]: set() for a in node.names})
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update({t.id: set() for t in targets if isinstance(t, ast.Name)})
    return names


def _exists(dotted: str) -> bool:
    """`ragloom.a.b` is a module, or a module's name (`ragloom.a.Class`, `ragloom.a.Class.m`)."""
    if dotted in MODULES:
        return True
    module, _, rest = dotted.rpartition(".")
    while module and module not in MODULES:
        module, _, head = module.rpartition(".")
        rest = f"{head}.{rest}"
    if not module:
        return False
    name, _, member = rest.partition(".")
    names = _names(module)
    return name in names and (not member or member in names[name])


def _classes() -> dict[str, set[str]]:
    """Every class of the package by name, with its members (same-named classes merged)."""
    out: dict[str, set[str]] = {}
    for module in MODULES:
        for name, members in _names(module).items():
            if members and name[0].isupper():
                out.setdefault(name, set()).update(members)
    return out


def test_every_package_and_top_level_module_is_on_the_map() -> None:
    packages = [m for m, p in MODULES.items() if p.name == "__init__.py"]
    top_level = [m for m in MODULES if m.count(".") == 1 and not m.endswith("__main__")]
    missing = [m for m in [*packages, *top_level] if f"`{m}`" not in MAP]
    assert missing == [], f"not named in docs/architecture.md: {missing}"


def test_every_module_named_on_the_map_exists() -> None:
    named = {t for t in TICKED if re.fullmatch(r"ragloom(\.\w+)+", t)}
    assert len(named) > 50
    gone = sorted(t for t in named if not _exists(t))
    assert gone == [], f"named in docs/architecture.md but not in the code: {gone}"


def test_every_class_member_and_file_named_on_the_map_exists() -> None:
    classes = _classes()
    members = [
        t for t in TICKED if re.fullmatch(r"[A-Z]\w+\.\w+", t) and t.split(".")[0] in classes
    ]
    assert len(members) > 10
    gone = [t for t in members if t.split(".")[1] not in classes[t.split(".")[0]]]
    files = [t for t in TICKED if re.fullmatch(r"[\w/]+\.py", t)]
    gone += [f for f in files if not (ROOT / f).exists()]
    assert gone == [], f"named in docs/architecture.md but not in the tree: {gone}"


def test_every_command_is_on_the_map() -> None:
    context = click.Context(cli)
    commands = cli.list_commands(context)
    assert {"index", "search", "check", "migrate", "mcp", "tune"} <= set(commands)
    missing = [c for c in commands if f"`{c}`" not in MAP]
    assert missing == [], f"commands missing from docs/architecture.md: {missing}"


def test_nothing_points_to_a_document_outside_the_repository() -> None:
    outside = "DESIGN" + ".md"  # the design notes this repository does not contain
    texts = [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]
    texts += [*(SRC / "ragloom").rglob("*.py"), *(ROOT / "bench").glob("*.py")]
    texts += [p for p in (ROOT / "tests").glob("*.py") if p.name != Path(__file__).name]
    found = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in texts
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if outside in line and " not in " not in line  # (a check that it is absent)
    ]
    assert found == []
    for page in (ROOT / "docs").glob("*.md"):
        for target in re.findall(r"\]\(([^)#]+)[^)]*\)", page.read_text(encoding="utf-8")):
            if "://" not in target:
                assert (page.parent / target).resolve().is_relative_to(ROOT), (page, target)
                assert (page.parent / target).exists(), (page.name, target)


def test_the_floor_table_is_the_codes() -> None:
    """The Layers section's table is what the imports give (`python tests/layers.py
    --markdown` prints it): a floor drawn from the code, not from memory."""
    from tests.layers import floor_table, report

    lines = MAP.splitlines()
    start = lines.index("| floor | rooms |")
    shown = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        shown.append(line)
    assert shown == floor_table(report()), "\n".join(floor_table(report()))
