"""Query latency while the embedding service fails (issue 9): refused connections, a service
that accepts and never answers, and a healthy one for comparison, with default and short
timeouts, for the first search after the failure and for searches during the cooldown.

Usage: python bench/service_failures.py [--queries 5]
The service is tests/embed_server.py (the OpenAI embeddings protocol over loopback HTTP).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.embed_server

from ragloom import Document, Index  # noqa: E402
from tests.embed_server import EmbedServer  # noqa: E402
from tests.server_launch import free_port  # noqa: E402

DOCS = [Document(f"d{i}", f"note {i} about retries, caches and timeouts") for i in range(50)]


def _timed_search(index: Index, n: int) -> tuple[float, bool]:
    started = time.perf_counter()
    hits = index.search(f"retries and timeouts {n}", top_k=5)  # a new text: no cached vector
    return (time.perf_counter() - started) * 1000, hits.degraded


def measure(folder: Path, options: str, fault: str, queries: int) -> tuple[float, float, bool]:
    """(first search ms, median ms of the next searches, degraded) with the service in
    `fault`: ok, refused or hang."""
    with EmbedServer() as server:
        port = int(server.url.rsplit(":", 1)[1])
        spec = f"openai:scripted@http://127.0.0.1:{port}/v1{options}"
        path = folder / f"{fault}{abs(hash(options))}.db"
        with Index(path, embedder=spec) as index:
            index.add(DOCS)
        if fault == "hang":
            server.mode = "hang"
            return _searches(path, spec, queries)
        if fault == "ok":
            return _searches(path, spec, queries)
    # refused: the server is gone; a fresh port nobody listens on is the same case
    return _searches(path, spec.replace(str(port), str(free_port())), queries)


def _searches(path: Path, spec: str, queries: int) -> tuple[float, float, bool]:
    with Index(path, embedder=spec) as index:
        first, degraded = _timed_search(index, 0)
        later = [_timed_search(index, n)[0] for n in range(1, queries + 1)]
    return first, statistics.median(later), degraded


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=5)
    args = parser.parse_args()
    table = Table(title="Hybrid search while the embedding service fails (loopback HTTP)")
    for column in ("service", "spec options", "first search ms", "next searches p50 ms", "answer"):
        table.add_column(column)
    with tempfile.TemporaryDirectory() as tmp:
        for fault in ("ok", "refused", "hang"):
            for options in ("", "?query_timeout=1"):
                first, later, degraded = measure(Path(tmp), options, fault, args.queries)
                answer = "degraded (lexical)" if degraded else "hybrid"
                table.add_row(fault, options or "defaults", f"{first:.0f}", f"{later:.1f}", answer)
    Console(width=120).print(table)


if __name__ == "__main__":
    main()
