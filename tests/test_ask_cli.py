"""`ragloom ask` (and `ragloom context` when nothing is found), run as a real subprocess
against a real index file and a loopback stand-in of the model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import ragloom
from ragloom.answer import NOT_COVERED
from ragloom.context import NOTHING_FOUND
from tests.llm_server import LLMServer

from .test_cli import ragloom as run_ragloom

LORE = [
    ("key", "Mira forged the silver key in the north tower at midwinter.", {"page": 3}),
    ("gate", "The silver key opens the gate of the drowned city under the lake.", {}),
    ("oren", "Oren rows the ferry across the cold lake every night.", {}),
]
NO_MODEL = {"RAGLOOM_EMBEDDER": "none", "RAGLOOM_LLM": ""}


@pytest.fixture(scope="module")
def index_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("ask") / "lore.db"
    with ragloom.Index(path, embedder=None) as index:
        index.add([ragloom.Document(d, text, metadata=meta) for d, text, meta in LORE])
    return path


@pytest.fixture
def server():
    with LLMServer() as live:
        yield live


def ask(index_file: Path, server: LLMServer | None, *args: str, provider: str = "openai"):
    llm = ["--llm", f"{provider}:tiny@{server.url}?timeout=10"] if server else []
    return run_ragloom("ask", *args, *llm, index=index_file, env=NO_MODEL)


@pytest.mark.parametrize("provider", ["openai", "ollama"])
def test_the_answer_then_its_sources(index_file, server, provider):
    server.responder = lambda messages: "Mira forged it [1] at midwinter [9]."
    done = ask(index_file, server, "who forged the silver key", provider=provider)
    assert done.returncode == 0, done.stderr
    answer, _, sources = done.stdout.partition("\n\nSources:\n")
    assert answer == "Mira forged it [1] at midwinter."
    assert sources.startswith("  [1] key · p. 3 · chars 0-")
    assert "[9]" in done.stderr and "named no passage" in done.stderr


def test_json_is_the_whole_result(index_file, server):
    server.responder = lambda messages: "The gate [2]."
    done = ask(index_file, server, "silver key gate", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["ok"] is True and data["answer"] == "The gate [2]."
    assert [c["n"] for c in data["citations"]] == [2]
    assert data["abstained"] is False and data["degraded"] is False
    assert {p["number"] for p in data["passages"]} >= {1, 2}


def test_show_prompt_prints_what_was_sent(index_file, server):
    server.responder = lambda messages: "ok"
    done = ask(index_file, server, "silver key", "--show-prompt", "--max-rounds", "0")
    assert done.returncode == 0, done.stderr
    assert "Prompt sent:\n--- system\n" in done.stdout and "<passages>" in done.stdout
    assert "--- user\nsilver key" in done.stdout
    assert "tools" not in server.chat_requests()[0]


def test_history_from_a_file(index_file, server, tmp_path):
    history = tmp_path / "chat.json"
    history.write_text(json.dumps([{"role": "user", "content": "Tell me about the lake."}]))
    server.replies = ["who rows across the lake", "Oren [1]."]
    done = ask(index_file, server, "who rows there?", "--history", str(history), "--json")
    data = json.loads(done.stdout)
    assert data["query"] == "who rows across the lake" and data["answer"] == "Oren [1]."
    history.write_text("[not json")
    bad = ask(index_file, server, "who rows there?", "--history", str(history))
    assert bad.returncode == 1 and "--history: cannot read" in bad.stderr


def test_off_topic_says_so_without_calling_the_model(index_file, server):
    done = ask(index_file, server, "quantum chromodynamics")
    assert done.returncode == 0 and done.stdout.startswith(NOT_COVERED)
    assert server.requests == []


def test_without_a_model_the_passages_and_why(index_file):
    done = ask(index_file, None, "silver key")
    assert done.returncode == 0
    assert "Passages:\n  [1]" in done.stdout
    assert "warning: no LLM is configured" in done.stderr
    strict = ask(index_file, None, "silver key", "--strict", "--json")
    assert strict.returncode == 1 and json.loads(strict.stdout)["code"] == "bad_input"


def test_a_failing_model_degrades_and_strict_fails(index_file, server):
    server.mode = "500"
    done = ask(index_file, server, "silver key", "--json")
    data = json.loads(done.stdout)
    assert done.returncode == 0 and data["degraded"] and "llm_failed" in data["reason"]
    assert data["passages"]
    strict = ask(index_file, server, "silver key", "--strict", "--json")
    assert strict.returncode == 1 and json.loads(strict.stdout)["code"] == "llm_failed"


@pytest.mark.parametrize(
    "args",
    [("--max-rounds", "-1"), ("--min-relevance", "3"), ("--top-k", "0"), ("x" * 10_001,)],
)
def test_bad_options_are_bad_requests(index_file, server, args):
    question = () if args[0].startswith("x") else ("silver key",)
    done = ask(index_file, server, *question, *args, "--json")
    assert done.returncode == 1 and json.loads(done.stdout)["code"] == "bad_request"
    assert server.requests == []


def test_context_says_retrieval_found_nothing(index_file):
    done = run_ragloom("context", "quantum chromodynamics", index=index_file, env=NO_MODEL)
    assert done.returncode == 0 and done.stdout.rstrip().endswith(NOTHING_FOUND)
    data = json.loads(
        run_ragloom(
            "context", "quantum chromodynamics", "--json", index=index_file, env=NO_MODEL
        ).stdout
    )
    assert data["passages"] == [] and data["note"] == NOTHING_FOUND
