"""What `ask` costs besides the model (issue 47's targets); run it with nothing else busy.

Usage: python bench/ask_timing.py [--chunks 100000]
           [--work /tmp/ragloom-ask] [--cache /tmp/ragloom-scale/cache] [--passes 3]
           [--tokens 30] [--json]

1. Retrieval's share of an answer, on a synthetic index of --chunks chunks built as
   bench/scale.py builds them (Zipf texts, clustered 384-d vectors from a table lookup, so the
   figures are ragloom's; kept in --work and reused, settled with optimize()): for each of
   40 hybrid queries (the first 8 words of an unseen chunk), timed in turns, every one after
   the query vector cache is cleared,
     - context: `Index.context(q, top_k=5)` (search + pack, what apps call today),
     - search + context: `Index.search` then `Index.context`,
     - ask: `Index.ask_stream(q, top_k=5)` up to the moment it calls the model (an
       in-process model that records the time it is called and answers at once).
   Target: ask's p50 at most 5 ms above context's (and search + context's).
2. The first answer token's way to the client: a loopback stand-in of the model (OpenAI's
   streamed protocol) waits 50 ms, then sends the answer in pieces; the delay from the moment
   it writes the first piece to the moment the client reads it, for
     - the library (`Index.ask_stream` in this process),
     - the command line (`ragloom ask` in a child process; its stdout read as it comes),
     - HTTP (`ragloom serve` in a child process; `POST /ask` with "stream": true read here).
   Target: at most 10 ms. Clocks: time.monotonic() is one clock for every process here.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from scale_data import Corpus, query_chunks  # noqa: E402
from scale_worker import _open, build  # noqa: E402

from ragloom import Document, Index  # noqa: E402
from ragloom.answer import AskResult  # noqa: E402
from ragloom.llm import ChatReply  # noqa: E402
from tests.llm_server import LLMServer  # noqa: E402
from tests.server_launch import ServerProcess  # noqa: E402

QUERY_WORDS = 8
FIRST_PIECE_DELAY = 0.05  # seconds the stand-in waits before its first piece
ANSWER = "Mira forged the silver key [1] in the north tower at midwinter, and it opens the gate."


class InstantModel:
    """A model in this process: notes when it is called, answers at once."""

    name = "instant"

    def __init__(self) -> None:
        self.called_at = 0.0

    def chat(self, messages, max_tokens=None) -> str:
        self.called_at = time.perf_counter()
        return "ok"

    def stream(self, messages, tools=None, max_tokens=None, budget=None):
        self.called_at = time.perf_counter()
        yield "ok"
        yield ChatReply("ok")


def _ms(since: float, until: float | None = None) -> float:
    return ((until if until is not None else time.perf_counter()) - since) * 1000


def retrieval_share(index: Index, n: int, passes: int) -> dict[str, list[float]]:
    """Milliseconds of context, search + context, and ask before the model, per query."""
    corpus = Corpus()
    queries = [" ".join(corpus.texts(q, 1)[0].split()[:QUERY_WORDS]) for q in query_chunks(n)]
    model = InstantModel()
    out: dict[str, list[float]] = {"context": [], "search + context": [], "ask": []}

    def context(q: str) -> float:
        started = time.perf_counter()
        index.context(q, top_k=5)
        return _ms(started)

    def search_context(q: str) -> float:
        started = time.perf_counter()
        index.search(q, top_k=5)
        index.context(q, top_k=5)
        return _ms(started)

    def ask(q: str) -> float:
        started = time.perf_counter()
        for event in index.ask_stream(q, top_k=5, llm=model, min_relevance=0.0, max_rounds=0):
            if isinstance(event, AskResult):
                assert not event.degraded and not event.abstained, event.reason
        return _ms(started, model.called_at)

    steps = {"context": context, "search + context": search_context, "ask": ask}
    for q in queries[:3]:  # warm: segments, kernels, tokenizer
        for step in steps.values():
            step(q)
    for turn in range(passes):
        for i, q in enumerate(queries):
            order = list(steps.items())
            shift = (i + turn) % len(order)  # each in first place as often as the others
            for name, step in order[shift:] + order[:shift]:
                index.clear_query_cache()
                out[name].append(step(q))
    return out


def _small_index(folder: Path) -> Path:
    path = folder / "answer.db"
    if not path.exists():
        with Index(path, embedder=None) as index:
            index.add(
                [
                    Document("key", "Mira forged the silver key in the north tower."),
                    Document("gate", "The silver key opens the gate of the drowned city."),
                ]
            )
    return path


def _first_delay(model: LLMServer, got_at: float) -> float:
    return (got_at - model.sent[0][0]) * 1000


def first_token(folder: Path, runs: int) -> dict[str, list[float]]:
    """Milliseconds from the stand-in writing the first piece to each client reading it."""
    path = _small_index(folder)
    out: dict[str, list[float]] = {"library": [], "command line": [], "HTTP": []}
    with LLMServer() as model:
        model.responder = lambda messages: ANSWER
        spec = f"openai:tiny@{model.url}?timeout=30"
        env = {**os.environ, "RAGLOOM_EMBEDDER": "none", "RAGLOOM_LLM": spec}
        with Index(path, embedder=None, llm=spec) as index:
            for _ in range(runs):
                model.sent.clear()
                model.piece_delay = FIRST_PIECE_DELAY
                events = index.ask_stream("silver key", min_relevance=0.0, max_rounds=0)
                first = next(e for e in events if isinstance(e, str))
                out["library"].append(_first_delay(model, time.monotonic()))
                model.piece_delay = 0.0
                assert first and isinstance(list(events)[-1], AskResult)
        command = [sys.executable, "-m", "ragloom", "--index", str(path), "ask", "silver key"]
        command += ["--min-relevance", "0", "--max-rounds", "0"]
        for _ in range(runs):
            model.sent.clear()
            model.piece_delay = FIRST_PIECE_DELAY
            child = subprocess.Popen(command, stdout=subprocess.PIPE, env=env, bufsize=0)
            assert child.stdout is not None
            child.stdout.read(1)
            out["command line"].append(_first_delay(model, time.monotonic()))
            model.piece_delay = 0.0
            child.stdout.read()
            assert child.wait(timeout=60) == 0
        with ServerProcess(path, env={"RAGLOOM_EMBEDDER": "none", "RAGLOOM_LLM": spec}) as live:
            body = {"question": "silver key", "stream": True, "min_relevance": 0, "max_rounds": 0}
            with httpx.Client(timeout=60) as http:
                for _ in range(runs):
                    model.sent.clear()
                    model.piece_delay = FIRST_PIECE_DELAY
                    seen = False
                    with http.stream("POST", f"{live.url}/ask", json=body) as answer:
                        for line in answer.iter_lines():
                            if not seen and line.startswith("event: text"):
                                out["HTTP"].append(_first_delay(model, time.monotonic()))
                                model.piece_delay, seen = 0.0, True
    return out


def _p(values: list[float], q: float) -> float:
    return (
        statistics.quantiles(values, n=100, method="inclusive")[q - 1]
        if len(values) > 1
        else values[0]
    )


def report(share: dict[str, list[float]], first: dict[str, list[float]], n: int) -> None:
    console = Console(width=140)
    table = Table(
        "step", "p50 ms", "p95 ms", "ask's p50 over it", title=f"before the model, {n:,} chunks"
    )
    ask = _p(share["ask"], 50)
    for name, values in share.items():
        over = (
            "-"
            if name == "ask"
            else f"{ask - _p(values, 50):+.2f} ms ({ask / _p(values, 50):.2f}x)"
        )
        table.add_row(name, f"{_p(values, 50):.2f}", f"{_p(values, 95):.2f}", over)
    console.print(table)
    table = Table(
        "client",
        "p50 ms",
        "p95 ms",
        "max ms",
        title="first token: the model writes it -> the client reads it",
    )
    for name, values in first.items():
        table.add_row(name, f"{_p(values, 50):.2f}", f"{_p(values, 95):.2f}", f"{max(values):.2f}")
    console.print(table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--work", type=Path, default=Path("/tmp/ragloom-ask"))
    parser.add_argument("--cache", type=Path, default=Path("/tmp/ragloom-scale/cache"))
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--runs", type=int, default=30, help="answers per client (first token)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    args.cache.mkdir(parents=True, exist_ok=True)
    path = args.work / f"scale-{args.chunks}.db"
    if not path.exists():
        build(path, args.chunks, args.cache)
    index = _open(path, Corpus(), args.cache, args.chunks)
    index.optimize()
    share = retrieval_share(index, args.chunks, args.passes)
    index.close()
    first = first_token(args.work, args.runs)
    if args.json:
        print(json.dumps({"retrieval_share": share, "first_token": first}))
    else:
        report(share, first, args.chunks)


if __name__ == "__main__":
    main()
