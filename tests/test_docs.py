"""The documentation covers the HTTP API and the README's commands work as written."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ragloom.server.app import create_app
from ragloom.server.errors import STATUS_BY_CODE
from ragloom.server.settings import ServerSettings

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def openapi(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    path = tmp_path_factory.mktemp("openapi") / "i.db"
    return create_app(ServerSettings.build(path, [], None, 1_000_000, "none")).openapi()


def _fields(schema: dict[str, Any]) -> set[str]:
    """Every property name of every model in the schema."""
    names: set[str] = set()
    for model in schema["components"]["schemas"].values():
        names.update(model.get("properties", {}))
    for operations in schema["paths"].values():
        for operation in operations.values():
            names.update(p["name"] for p in operation.get("parameters", ()) if p["in"] == "query")
    return names


def test_http_reference_covers_every_endpoint_field_and_error_code(openapi) -> None:
    http = (ROOT / "docs" / "http.md").read_text(encoding="utf-8")
    for path, operations in openapi["paths"].items():
        shown = path.replace("{doc_id}", "{id}")
        for method in operations:
            assert f"{method.upper()} {shown}" in http, f"{method.upper()} {path} undocumented"
    for field in _fields(openapi):
        assert f"`{field}`" in http or f'"{field}"' in http, f"field {field!r} undocumented"
    for code in [*STATUS_BY_CODE, "http_error"]:
        assert f"`{code}`" in http, f"error code {code!r} undocumented"
    curls = [line for line in http.splitlines() if line.strip().startswith("curl ")]
    for path in openapi["paths"]:
        stem = path.split("{")[0].rstrip("/")
        assert any(stem in line for line in curls), f"no curl example for {path}"


def test_readme_links_an_architecture_page_inside_the_repository() -> None:
    targets = re.findall(r"\]\(([^)]+)\)", README)
    assert not [t for t in targets if t.startswith("../")], "README links outside the repo"
    assert "DESIGN.md" not in README
    assert "docs/architecture.md" in targets
    architecture = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    for module in ("ragloom.chunking", "ragloom.retrieval", "ragloom.server", "ragloom.store"):
        assert module in architecture
    assert "docs/http.md" in targets or "http.md" in architecture


def _first_command() -> str:
    block = README.split("```bash", 1)[1].split("```", 1)[0]
    lines = [line for line in block.splitlines() if line.strip() and not line.startswith("#")]
    return lines[0]


def test_readme_first_command_installs_the_local_model() -> None:
    command = _first_command()
    install = next(part for part in command.split("&&") if "pip install" in part)
    assert "[dense]" in install, install


def test_readme_first_command_shows_a_hybrid_search_naming_each_hits_leg(tmp_path: Path) -> None:
    """Run the README's first command (its ragloom steps; this environment has the model)."""
    steps = [shlex.split(part) for part in _first_command().split("&&")]
    runs = [step for step in steps if step[0].endswith("bin/ragloom")]
    assert [step[step.index("--index") + 2] if "--index" in step else step[1] for step in runs]
    outputs = []
    for step in runs:
        args = [tmp_path / "r.db" if arg.endswith(".db") else arg for arg in step[1:]]
        proc = subprocess.run(
            [sys.executable, "-m", "ragloom", *map(str, args)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=600,
            env={**__import__("os").environ, "RAGLOOM_EMBEDDER": "auto"},
        )
        assert proc.returncode == 0, proc.stderr
        outputs.append(proc.stdout)
    shown = outputs[-1]
    assert "hybrid" in shown
    found = re.findall(r"found by (lexical|dense|both)", shown)
    assert found, shown
    lexical_flag = re.search(r"`(--embedder none)`|`(--mode lexical)`", README)
    assert lexical_flag, "the lexical-only flag is not documented next to the first command"
    search = runs[-1]
    only = [a if not a.endswith(".db") else str(tmp_path / "r.db") for a in search[1:]]
    lexical = subprocess.run(
        [sys.executable, "-m", "ragloom", *only, "--mode", "lexical", "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert {h["match"] for h in json.loads(lexical.stdout)["results"]} == {"lexical"}
