"""`POST /ask` over real loopback HTTP: JSON and `"stream": true` (text/event-stream), against
a real `ragloom serve` whose model is a loopback stand-in; `ragloom.Client.ask` and
`ask_stream` read both."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

import ragloom
from ragloom.answer import NOT_COVERED, AskResult
from ragloom.client import server_events
from tests.llm_server import LLMServer
from tests.server_launch import ServerProcess

LORE = [
    ("key", "Mira forged the silver key in the north tower at midwinter.", {"page": 3}),
    ("gate", "The silver key opens the gate of the drowned city under the lake.", {}),
    ("oren", "Oren rows the ferry across the cold lake every night.", {"kind": "ferry"}),
]


@pytest.fixture(scope="module")
def model():
    with LLMServer() as live:
        yield live


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, model: LLMServer):
    root = tmp_path_factory.mktemp("ask-http")
    notes = root / "notes"
    notes.mkdir()
    (notes / "key.md").write_text(LORE[0][1])
    path = root / "lore.db"
    with ragloom.Index(path, embedder=None) as index:
        index.add([ragloom.Document(d, text, metadata=meta) for d, text, meta in LORE[1:]])
        index.index_path(notes)
    env = {
        "RAGLOOM_EMBEDDER": "none",
        "RAGLOOM_LLM": f"openai:tiny@{model.url}?timeout=10&cooldown=0&retry_delay=0.05",
    }
    with ServerProcess(path, roots=[root], env=env) as server:
        yield server
        assert "Traceback" not in server.output(), server.output()[-3000:]


@pytest.fixture
def fresh(model: LLMServer):
    model.mode, model.replies, model.requests[:] = "ok", [], []
    model.responder = lambda messages: "{}"
    return model


def stream(url: str, body: dict) -> tuple[list[tuple[str, dict]], httpx.Response]:
    with httpx.stream("POST", f"{url}/ask", json={**body, "stream": True}, timeout=60) as answer:
        if answer.is_success:
            return list(server_events(answer.iter_lines())), answer
        answer.read()
    return [], answer


def test_json_answer_with_checked_citations_and_relative_sources(served, fresh):
    fresh.responder = lambda messages: "Mira forged it [1] at midwinter [7]."
    answer = httpx.post(f"{served.url}/ask", json={"question": "who forged the silver key"})
    assert answer.status_code == 200
    data = answer.json()
    assert data["ok"] is True and data["answer"] == "Mira forged it [1] at midwinter."
    assert data["invalid_citations"] == [7]
    (citation,) = data["citations"]
    assert citation["n"] == 1 and citation["source"] == "notes/key.md"
    assert all(not (p["source"] or "").startswith("/") for p in data["passages"])
    assert data["model"] == "openai:tiny" and data["rounds"] == 0


def test_a_stream_of_text_events_then_the_whole_answer(served, fresh):
    fresh.responder = lambda messages: "The silver key opens the gate [1], says the lore."
    events, answer = stream(served.url, {"question": "silver key gate", "top_k": 2})
    assert answer.headers["content-type"].startswith("text/event-stream")
    names = [name for name, _ in events]
    assert names[-1] == "done" and set(names[:-1]) == {"text"} and len(names) > 4
    text = "".join(data["text"] for name, data in events if name == "text")
    done = events[-1][1]
    assert text == done["answer"] == "The silver key opens the gate [1], says the lore."
    assert done["citations"][0]["n"] == 1 and done["ok"] is True


def test_the_client_reads_both_forms(served, fresh):
    fresh.responder = lambda messages: "Oren [1]."
    with ragloom.Client(served.url) as client:
        result = client.ask("who rows the ferry", max_rounds=0)
        assert isinstance(result, AskResult) and result.answer == "Oren [1]."
        pieces = list(client.ask_stream("who rows the ferry", top_k=1))
    assert isinstance(pieces[-1], AskResult) and "".join(pieces[:-1]) == "Oren [1]."
    assert "tools" not in fresh.chat_requests()[0]


def test_off_topic_abstains_without_the_model(served, fresh):
    events, _ = stream(served.url, {"question": "quantum chromodynamics"})
    assert events[0] == ("text", {"text": NOT_COVERED})
    assert events[-1][1]["abstained"] is True and fresh.requests == []


def test_a_failing_model_gives_the_passages_and_strict_an_error(served, fresh):
    fresh.mode = "500"
    data = httpx.post(f"{served.url}/ask", json={"question": "silver key"}, timeout=60).json()
    assert data["degraded"] and "llm_failed" in data["reason"] and data["passages"]
    events, _ = stream(served.url, {"question": "silver key"})
    assert [name for name, _ in events] == ["done"] and events[0][1]["degraded"]
    strict = httpx.post(
        f"{served.url}/ask", json={"question": "silver key", "strict": True}, timeout=60
    )
    assert strict.status_code == 502 and strict.json()["code"] == "llm_failed"
    events, answer = stream(served.url, {"question": "silver key", "strict": True})
    assert answer.status_code == 502 and events == []


def test_a_stream_that_fails_midway_ends_with_an_error_event(served, fresh):
    fresh.mode, fresh.stall_after = "cut", 2
    fresh.responder = lambda messages: "one two three four"
    events, _ = stream(served.url, {"question": "silver key", "strict": True})
    assert [name for name, _ in events] == ["text", "text", "error"]
    assert "".join(data["text"] for name, data in events[:2]) == "one two"
    assert events[-1][1]["code"] == "llm_failed" and events[-1][1]["ok"] is False


def test_history_is_rewritten_over_http(served, fresh):
    fresh.replies = ["who rows across the lake", "Oren [1]."]
    body = {
        "question": "who rows there?",
        "history": [{"role": "user", "content": "Tell me about the lake."}],
    }
    data = httpx.post(f"{served.url}/ask", json=body, timeout=60).json()
    assert data["query"] == "who rows across the lake" and data["answer"] == "Oren [1]."


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"question": 3},
        {"question": "x" * 10_001},
        {"question": "key", "max_rounds": 11},
        {"question": "key", "max_rounds": 2.5},
        {"question": "key", "history": [{"role": "system", "content": "x"}]},
        {"question": "key", "history": [{"role": "user"}]},
        {"question": "key", "colour": "red"},
        {"question": "key", "stream": "yes"},
    ],
)
def test_bad_bodies_are_bad_requests(served, fresh, body):
    answer = httpx.post(f"{served.url}/ask", json=body, timeout=60)
    assert answer.status_code == 400 and answer.json()["code"] == "bad_request"
    assert fresh.requests == []


def test_integers_may_be_written_as_2_0_and_the_schema_lists_ask(served, fresh):
    fresh.responder = lambda messages: "ok"
    body = {"question": "silver key", "max_rounds": 0.0, "top_k": 2.0}
    assert httpx.post(f"{served.url}/ask", json=body, timeout=60).json()["answer"] == "ok"
    schema = httpx.get(f"{served.url}/openapi.json").json()
    request = schema["components"]["schemas"]["AskRequest"]["properties"]
    assert request["question"]["maxLength"] == 10_000
    assert request["max_rounds"]["maximum"] == 10
    assert request["history"]["anyOf"][0]["maxItems"] == 100
    assert "text/event-stream" in schema["paths"]["/ask"]["post"]["responses"]["200"]["content"]


def test_unknown_collection_is_404(served, fresh):
    answer = httpx.post(f"{served.url}/ask", json={"question": "key", "collection": "nope"})
    assert answer.status_code == 404 and json.loads(answer.text)["code"] == "not_found"


def test_passages_are_the_ones_the_prompt_held(served, fresh, tmp_path: Path):
    fresh.responder = lambda messages: "ok"
    data = httpx.post(
        f"{served.url}/ask", json={"question": "silver key", "show_prompt": True}, timeout=60
    ).json()
    system = data["prompt"][0]["content"]
    for passage in data["passages"]:
        assert f"[{passage['number']}]" in system and passage["text"] in system


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"top_k": 1},
        {"mode": "lexical", "filters": {"kind": "ferry"}},
        {"bm25": {"k1": 1.2, "b": 0.75}, "max_rounds": 0},
        {"min_relevance": 1.0},
    ],
    ids=["plain", "top_k", "filter", "bm25", "floor"],
)
def test_every_interface_gives_the_same_answer(served, fresh, options):
    """The library, the command line, HTTP and the Python client: the same passages, the same
    answer, citations and abstention for the same question and options."""
    fresh.responder = lambda messages: "The lake [1] and the key [2] [8]."
    question = "silver key lake"
    spec = f"openai:tiny@{fresh.url}?timeout=10"
    shape = lambda d: (  # noqa: E731
        d["answer"],
        d["invalid_citations"],
        d["abstained"],
        [(p["number"], p["document_id"], p["start"], p["end"]) for p in d["passages"]],
        [c["n"] for c in d["citations"]],
    )
    with ragloom.Index(served.index_path, embedder=None, llm=spec) as index:
        library = shape(index.ask(question, **options).to_dict())
    http = shape(httpx.post(f"{served.url}/ask", json={"question": question, **options}).json())
    with ragloom.Client(served.url) as client:
        via_client = shape(client.ask(question, **options).to_dict())
    args = [sys.executable, "-m", "ragloom", "--index", str(served.index_path), "--llm", spec]
    args += ["ask", question, "--json"]
    for name, value in options.items():
        if name == "bm25":
            for key, number in value.items():
                args += [f"--{key}", str(number)]
        elif name == "filters":
            args += ["--filter", json.dumps(value)]
        else:
            args += [f"--{name.replace('_', '-')}", str(value)]
    done = subprocess.run(args, capture_output=True, text=True, timeout=120)
    command_line = shape(json.loads(done.stdout))
    assert library == http == via_client == command_line
