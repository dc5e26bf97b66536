"""One table of cases run against every interface: the library, the command line, the HTTP
client, MCP over stdio (the official `mcp` client), LangChain and LlamaIndex (in process and
over HTTP). Each case gives the same hits in the same order everywhere, or the same typed
error code. A case runs on every interface that offers its options (`ragloom.contract`):
the tools offer top_k and filters, not the fusion controls.

`python -m pytest tests/test_conformance.py -q -rA` prints one line per case and interface.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest

import ragloom
from ragloom.contract import ARGUMENTS, offered
from ragloom.errors import RagloomError
from tests.server_launch import ServerProcess

from .children import mcp_env

DOCS = [
    ("key", "Mira forged the silver key in the north tower.", {"book": 1, "tags": ["forge"]}),
    ("gate", "The silver key opens the gate of the drowned city.", {"book": 2, "tags": ["city"]}),
    ("mira", "Mira is a blacksmith's daughter with a scar on her hand.", {"book": 1}),
    ("tower", "The north tower keeps the silver bell and the old key ring.", {"book": 3}),
    ("city", "Nobody returns from the drowned city under the lake.", {"book": 2}),
    ("bell", "A silver bell rings when the gate opens at dawn.", {"book": 3}),
    ("lake", "The lake is cold; its keeper counts the silver fish.", {"book": 4}),
]


@dataclass(frozen=True)
class Case:
    """A search (query, options) and what it must give: hits (None: compare only across
    interfaces) or an error code."""

    name: str
    query: str | None
    options: dict[str, Any] = field(default_factory=dict)
    collection: str | None = None
    error: str | None = None
    count: int | None = None  # how many hits, when the case pins it


CASES = [
    Case("plain", "silver key"),
    Case("top_k", "silver key", {"top_k": 2}, count=2),
    Case("top_k 1", "silver", {"top_k": 1}, count=1),
    Case("filter equal", "silver", {"filters": {"book": 2}}),
    Case("filter range", "silver", {"filters": {"book": {"$gte": 3}}, "top_k": 10}),
    Case("filter list", "silver", {"filters": {"tags": {"$overlap": ["forge", "city"]}}}),
    Case("no match", "unicorn", count=0),
    Case("empty query", "", count=0),
    Case("mode", "silver key", {"mode": "lexical"}),
    Case("fusion rrf", "silver key", {"fusion": "rrf"}),
    Case("candidates", "silver", {"candidates": 3, "top_k": 3}),
    Case("boost", "silver", {"boosts": [{"when": {"book": 3}, "factor": 5.0}]}),
    Case("min_score", "silver key", {"min_score": 0.5}),
    Case("prefer", "silver", {"prefer": [{"book": 4}], "fusion": "weighted"}),
    Case("strict", "silver key", {"strict": True}),
    Case("expand prf", "silver key", {"expand": "prf"}),
    Case("collection", "silver", collection="default"),
    Case("weights", "silver", {"fusion": "weighted", "weights": {"lexical": 1.0, "dense": 0.5}}),
    Case("normalization", "silver", {"fusion": "weighted", "normalization": "minmax"}),
    Case("rrf_k", "silver", {"fusion": "rrf", "rrf_k": 10}),
    Case("similarity floor", "silver", {"min_dense_similarity": 0.5}),
    Case("diversity", "silver", {"diversity": {"max_per": {"book": 1}}}),
    Case("mmr", "silver", {"diversity": {"mmr": {"lambda": 0.5}}}, error="needs_vectors"),
    Case("steps' settings", "silver", {"max_variants": 3, "merge": "best", "rerank_depth": 10}),
    Case("hops 1", "silver", {"hops": 1}),
    Case("explain", "silver key", {"explain": True}),
    Case("tokens", "silver key", {"tokens": True}),
    Case("bm25", "silver key", {"bm25": {"k1": 1.2, "b": 0.75}}),
    Case("bm25 k1 only", "silver key", {"bm25": {"k1": 2.0}}),
    Case("top_k 2.0", "silver", {"top_k": 2.0}, count=2),
    # bad input: the same code everywhere
    Case("top_k 0", "silver", {"top_k": 0}, error="bad_request"),
    Case("top_k huge", "silver", {"top_k": 10**9}, error="bad_request"),
    Case("top_k text", "silver", {"top_k": "3"}, error="bad_request"),
    Case("top_k fraction", "silver", {"top_k": 2.5}, error="bad_request"),
    Case("top_k bool", "silver", {"top_k": True}, error="bad_request"),
    Case("candidates 0", "silver", {"candidates": 0}, error="bad_request"),
    Case("unknown mode", "silver", {"mode": "fuzzy"}, error="bad_request"),
    Case("unknown fusion", "silver", {"fusion": "max"}, error="bad_request"),
    Case("hops 9", "silver", {"hops": 9}, error="bad_request"),
    Case("similarity 2", "silver", {"min_dense_similarity": 2.0}, error="bad_request"),
    Case("negative weight", "silver", {"weights": {"lexical": -1.0}}, error="bad_request"),
    Case("unknown leg", "silver", {"weights": {"sparse": 1.0}}, error="bad_request"),
    Case("cap 0", "silver", {"diversity": {"max_per": {"book": 0}}}, error="bad_request"),
    Case("mmr 2", "silver", {"diversity": {"mmr": {"lambda": 2.0}}}, error="bad_request"),
    Case("filters not object", "silver", {"filters": [1]}, error="bad_request"),
    Case("bad operator", "silver", {"filters": {"book": {"$near": 1}}}, error="bad_input"),
    Case(
        "boost without factor", "silver", {"boosts": [{"when": {"book": 1}}]}, error="bad_request"
    ),
    Case("boost factor 0", "silver", {"boosts": [{"when": {}, "factor": 0}]}, error="bad_request"),
    Case("unknown option", "silver", {"colour": "red"}, error="bad_request"),
    Case("bm25 b 2", "silver", {"bm25": {"b": 2.0}}, error="bad_request"),
    Case("query too long", "silver " * 2000, error="bad_request"),
    Case(
        "filters too many",
        "silver",
        {"filters": {f"k{i}": 1 for i in range(101)}},
        error="bad_request",
    ),
    Case("unknown collection", "silver", collection="nope", error="not_found"),
]


def _needs(case: Case) -> set[str]:
    """The declared options a case uses (an undeclared one is sent to every interface: each
    must refuse it)."""
    return set(case.options) & set(ARGUMENTS)


def _offered(surface: str) -> set[str]:
    names = {o.name for o in offered(surface)}
    own = {"tool": {"collections"}, "cli": {"bm25"}}  # the command line says --k1 and --b
    return names | own.get(surface, set())


# Which contract surface each interface speaks; the frameworks take the library's options.
SURFACE = {
    "library": "library",
    "cli": "cli",
    "http": "http",
    "mcp": "tool",
    "langchain": "library",
    "langchain-http": "http",
    "llamaindex": "library",
    "llamaindex-http": "http",
}
# What an interface cannot express at all (a typed value its own parser turns into another).
CANNOT = {
    "cli": {"top_k text", "top_k fraction", "top_k 2.0", "top_k bool", "filters not object"},
}


def applies(case: Case, interface: str) -> bool:
    if case.name in CANNOT.get(interface, ()):
        return False
    return _needs(case) <= _offered(SURFACE[interface])


Outcome = tuple[str, Any]  # ("hits", [(chunk_id, score), ...]) or ("error", code)


def _hits(pairs: list[tuple[str, float]]) -> Outcome:
    return ("hits", pairs)


# -- the interfaces ---------------------------------------------------------------------


def _keywords(options: dict[str, Any]) -> dict[str, Any]:
    """Options by their library keywords (an undeclared name as it is)."""
    return {(ARGUMENTS[k].keyword if k in ARGUMENTS else k): v for k, v in options.items()}


def _split(case: Case) -> tuple[Any, dict[str, Any]]:
    options = dict(case.options)
    return options.pop("top_k", None), options


def run_library(index: ragloom.Index, case: Case) -> Outcome:
    top_k, options = _split(case)
    kwargs = _keywords(options)
    if top_k is not None:
        kwargs["top_k"] = top_k
    if case.collection is not None:
        kwargs["collection"] = case.collection
    try:
        found = index.search(case.query, **kwargs)
    except RagloomError as exc:
        return ("error", exc.code)
    return _hits([(h.chunk_id, h.score) for h in found])


def run_http(client: ragloom.Client, case: Case) -> Outcome:
    top_k, options = _split(case)
    kwargs = dict(options)
    if top_k is not None:
        kwargs["top_k"] = top_k
    try:
        found = client.search(case.query, collection=case.collection, **kwargs)
    except RagloomError as exc:
        return ("error", exc.code)
    return _hits([(h.chunk_id, h.score) for h in found])


def _cli_args(case: Case) -> list[str]:
    args = ["search", case.query, "--json"]
    if case.collection is not None:
        args += ["--collection", case.collection]
    for name, value in case.options.items():
        option = ARGUMENTS.get(name)
        if name == "bm25":
            for key, number in value.items():
                args += [f"--{key}", str(number)]
        elif option is None:  # undeclared: a flag of that name
            args += ["--" + name.replace("_", "-"), str(value)]
        elif option.kind == "boolean":
            args += [option.cli_flag] if value else []
        elif option.pairs:
            for key, number in value.items():
                args += [option.cli_flag, f"{key}={number}"]
        elif option.kind == "array":
            for item in value:
                args += [option.cli_flag, json.dumps(item)]
        elif option.kind == "object":
            args += [option.cli_flag, json.dumps(value)]
        else:
            args += [option.cli_flag, str(value)]
    return args


def run_cli(index_path: Path, case: Case) -> Outcome:
    command = [sys.executable, "-m", "ragloom", "--index", str(index_path), "--embedder", "none"]
    done = subprocess.run(
        command + _cli_args(case), capture_output=True, text=True, timeout=120, check=False
    )
    answer = json.loads(done.stdout)
    if done.returncode != 0:
        assert answer["ok"] is False, done.stderr
        return ("error", answer["code"])
    return _hits([(h["chunk_id"], h["score"]) for h in answer["results"]])


def run_langchain(source: Any, case: Case) -> Outcome:
    from ragloom.integrations.langchain import RagloomRetriever

    top_k, options = _split(case)
    try:
        retriever = RagloomRetriever(source=source, collection=case.collection)
        kwargs = _keywords(options)
        if top_k is not None:
            kwargs["k"] = top_k
        docs = retriever.invoke(case.query, **kwargs)
    except RagloomError as exc:
        return ("error", exc.code)
    return _hits([(d.id, d.metadata["score"]) for d in docs])


def run_llamaindex(source: Any, case: Case) -> Outcome:
    from ragloom.integrations.llamaindex import RagloomRetriever

    top_k, options = _split(case)
    try:
        retriever = RagloomRetriever(
            source,
            collection=case.collection,
            top_k=top_k,
            search_options=_keywords(options),
        )
        nodes = retriever.retrieve(case.query)
    except RagloomError as exc:
        return ("error", exc.code)
    return _hits([(n.node.node_id, n.score) for n in nodes])


def run_mcp(index_path: Path, cases: list[Case]) -> dict[str, Outcome]:
    """Every MCP case in one session with the server (`ragloom mcp`) over stdio."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "ragloom", "--index", str(index_path), "--embedder", "none", "mcp"],
        env=mcp_env(),
    )

    async def session() -> dict[str, Outcome]:
        out: dict[str, Outcome] = {}
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            for case in cases:
                arguments: dict[str, Any] = {"query": case.query, **case.options}
                if case.collection is not None:
                    arguments["collections"] = [case.collection]
                result = await client.call_tool("search", arguments)
                if result.is_error:
                    out[case.name] = ("error", result.content[0].text.split(":", 1)[0])
                else:
                    hits = result.structured_content["results"]
                    out[case.name] = _hits([(h["chunk_id"], h["score"]) for h in hits])
        return out

    return anyio.run(session)


# -- the table --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def index_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("conformance") / "index.db"
    with ragloom.Index(path, embedder=None) as index:
        index.add([ragloom.Document(d, text, metadata=meta) for d, text, meta in DOCS])
    return path


@pytest.fixture(scope="module")
def outcomes(index_path: Path) -> dict[str, dict[str, Outcome]]:
    """Every case on every interface that offers it."""
    index = ragloom.Index(index_path, embedder=None)
    answers: dict[str, dict[str, Outcome]] = {name: {} for name in SURFACE}
    with ServerProcess(index_path, env={"RAGLOOM_EMBEDDER": "none"}) as server:
        client = ragloom.Client(server.url)
        runners: dict[str, Callable[[Case], Outcome]] = {
            "library": lambda c: run_library(index, c),
            "http": lambda c: run_http(client, c),
            "langchain": lambda c: run_langchain(index, c),
            "langchain-http": lambda c: run_langchain(client, c),
            "llamaindex": lambda c: run_llamaindex(index, c),
            "llamaindex-http": lambda c: run_llamaindex(client, c),
        }
        for interface, run in runners.items():
            for case in CASES:
                if applies(case, interface):
                    answers[interface][case.name] = run(case)
        client.close()
    cli_cases = [case for case in CASES if applies(case, "cli")]
    with ThreadPoolExecutor(4) as pool:  # a process a case: several start side by side
        cli_outcomes = pool.map(lambda case: run_cli(index_path, case), cli_cases)
        answers["cli"] = {case.name: got for case, got in zip(cli_cases, cli_outcomes)}
    answers["mcp"] = run_mcp(index_path, [c for c in CASES if applies(c, "mcp")])
    index.close()
    return answers


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_every_interface_agrees(case: Case, outcomes: dict[str, dict[str, Outcome]]) -> None:
    reference = outcomes["library"][case.name]
    if case.error is not None:
        assert reference == ("error", case.error)
    else:
        assert reference[0] == "hits", reference
        if case.count is not None:
            assert len(reference[1]) == case.count
        assert all(score >= 0 for _, score in reference[1])
    seen = {}
    for interface in SURFACE:
        if case.name in outcomes[interface]:
            got = outcomes[interface][case.name]
            seen[interface] = got
            if reference[0] == "hits" and got[0] == "hits":
                # the same hits in the same order, the same scores (6 decimals over the tools)
                assert [c for c, _ in got[1]] == [c for c, _ in reference[1]], interface
                for (_, a), (_, b) in zip(got[1], reference[1]):
                    assert a == pytest.approx(b, abs=1e-6), interface
            else:
                assert got == reference, interface
    assert {"library", "http", "langchain", "llamaindex"} <= set(seen)


def test_every_interface_runs_most_cases(outcomes: dict[str, dict[str, Outcome]]) -> None:
    """The table reaches every interface: the tools take only top_k and filters; the
    command line cannot send a string or a fraction where it parses a number, and spells
    diversity its own way (--max-per, --mmr)."""
    counts = {interface: len(answers) for interface, answers in outcomes.items()}
    print("\n| case | " + " | ".join(SURFACE) + " |")
    for case in CASES:
        cells = []
        for interface in SURFACE:
            got = outcomes[interface].get(case.name)
            cells.append(
                "-" if got is None else got[1] if got[0] == "error" else f"{len(got[1])} hits"
            )
        print(f"| {case.name} | " + " | ".join(cells) + " |")
    print(json.dumps(counts))
    for interface in ("library", "http", "langchain", "llamaindex", "llamaindex-http"):
        assert counts[interface] == len(CASES), interface
    assert counts["cli"] >= 0.8 * len(CASES)
    assert counts["mcp"] >= 15
