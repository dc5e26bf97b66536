"""Load test of `ragloom serve`: N concurrent clients issue POST /query for a fixed time.

Builds (or reuses) a lexical index of SciFact, starts the server as a subprocess on a loopback
port, drives it with keep-alive HTTP/1.1 connections from one asyncio loop, and prints
requests/s, latency percentiles and errors, plus the CPU each side used (client and server
share this machine's cores, so a greedy load generator would understate the server).

    python bench/server_load.py                      # 32 clients, 20 s
    python bench/server_load.py --clients 64 --duration 30 --driver httpx
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

os.environ.setdefault("RAGLOOM_EMBEDDER", "none")  # the target is lexical: no model in the loop
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.server_launch

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

import ragloom  # noqa: E402
from ragloom.evaluation.beir import load_beir  # noqa: E402
from tests.server_launch import ServerProcess  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = Path(os.environ.get("RAGLOOM_DATA", REPO.parent / "shared" / "data")) / "scifact"
console = Console(width=140)


@dataclass
class Tally:
    """What the clients saw."""

    latencies: list[float] = field(default_factory=list)
    errors: int = 0
    error_samples: list[str] = field(default_factory=list)

    def fail(self, why: str) -> None:
        self.errors += 1
        if len(self.error_samples) < 5:
            self.error_samples.append(why)


def build_index(data: Path, index_path: Path, rebuild: bool) -> int:
    """Index the corpus lexically unless an index with the same document count exists."""
    dataset = load_beir(data)
    expected = sum(1 for _ in dataset.iter_corpus())
    if index_path.exists() and not rebuild:
        with ragloom.Index(index_path, create=False) as index:
            if index.stats()["documents"] == expected:
                return expected
        index_path.unlink()
    index_path.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    with ragloom.Index(index_path) as index:
        report = index.add(dataset.iter_corpus())
    console.print(
        f"indexed {report.documents} documents ({report.chunks} chunks) "
        f"in {time.perf_counter() - start:.1f} s"
    )
    return expected


def request_bytes(host: str, query: str, top_k: int, token: str | None) -> bytes:
    body = json.dumps({"query": query, "top_k": top_k}).encode()
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    head = (
        f"POST /query HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        f"{auth}Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


async def raw_client(
    host: str, port: int, payloads: list[bytes], deadline: float, tally: Tally, seed: int
) -> None:
    """One keep-alive connection issuing requests back to back (minimal HTTP/1.1 parsing)."""
    rng = random.Random(seed)
    reader, writer = await asyncio.open_connection(host, port)
    try:
        while time.perf_counter() < deadline:
            start = time.perf_counter()
            writer.write(payloads[rng.randrange(len(payloads))])
            head = await reader.readuntil(b"\r\n\r\n")
            status = int(head[9:12])
            length = 0
            for line in head.split(b"\r\n"):
                if line[:15].lower() == b"content-length:":
                    length = int(line[15:])
            body = await reader.readexactly(length)
            if status == 200 and body.startswith(b'{"ok":true'):
                tally.latencies.append(time.perf_counter() - start)
            else:
                tally.fail(f"HTTP {status}: {body[:200]!r}")
    except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
        tally.fail(f"{type(exc).__name__}: {exc}")
    finally:
        writer.close()


async def httpx_client(
    client: object, queries: list[str], top_k: int, deadline: float, tally: Tally, seed: int
) -> None:
    """The same loop through httpx (a heavier but standard client)."""
    import httpx

    assert isinstance(client, httpx.AsyncClient)
    rng = random.Random(seed)
    while time.perf_counter() < deadline:
        start = time.perf_counter()
        try:
            response = await client.post(
                "/query", json={"query": rng.choice(queries), "top_k": top_k}
            )
        except httpx.HTTPError as exc:
            tally.fail(f"{type(exc).__name__}: {exc}")
            continue
        if response.status_code == 200 and response.json().get("ok") is True:
            tally.latencies.append(time.perf_counter() - start)
        else:
            tally.fail(f"HTTP {response.status_code}: {response.text[:200]}")


async def drive(
    url: str, queries: list[str], args: argparse.Namespace, duration: float, tally: Tally
) -> None:
    """Run `args.clients` concurrent clients for `duration` seconds."""
    host, port = url.removeprefix("http://").split(":")
    deadline = time.perf_counter() + duration
    if args.driver == "raw":
        payloads = [request_bytes(host, q, args.top_k, args.token) for q in queries]
        tasks = [
            raw_client(host, int(port), payloads, deadline, tally, seed)
            for seed in range(args.clients)
        ]
        await asyncio.gather(*tasks)
        return
    import httpx

    headers = {"Authorization": f"Bearer {args.token}"} if args.token else {}
    limits = httpx.Limits(max_connections=args.clients, max_keepalive_connections=args.clients)
    async with httpx.AsyncClient(
        base_url=url, headers=headers, limits=limits, timeout=30
    ) as client:
        tasks = [
            httpx_client(client, queries, args.top_k, deadline, tally, seed)
            for seed in range(args.clients)
        ]
        await asyncio.gather(*tasks)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux /proc), 0 where unavailable."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def report(args: argparse.Namespace, tally: Tally, client_cpu: float, server_cpu: float) -> dict:
    n = len(tally.latencies)
    result = {
        "clients": args.clients,
        "duration_s": args.duration,
        "driver": args.driver,
        "requests": n,
        "requests_per_s": n / args.duration,
        "p50_ms": percentile(tally.latencies, 0.50) * 1000,
        "p99_ms": percentile(tally.latencies, 0.99) * 1000,
        "mean_ms": (statistics.fmean(tally.latencies) * 1000) if n else float("nan"),
        "errors": tally.errors,
        "client_cpu_pct": 100 * client_cpu / args.duration,
        "server_cpu_pct": 100 * server_cpu / args.duration,
        "cores": os.cpu_count(),
    }
    table = Table(title=f"ragloom serve: POST /query, SciFact, {args.clients} clients")
    for column in ("req/s", "p50 ms", "p99 ms", "requests", "errors", "client CPU", "server CPU"):
        table.add_column(column, justify="right")
    table.add_row(
        f"{result['requests_per_s']:.0f}",
        f"{result['p50_ms']:.1f}",
        f"{result['p99_ms']:.1f}",
        str(n),
        str(tally.errors),
        f"{result['client_cpu_pct']:.0f}%",
        f"{result['server_cpu_pct']:.0f}%",
    )
    console.print(table)
    for sample in tally.error_samples:
        console.print(f"[red]error:[/] {sample}", markup=True, highlight=False)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="BEIR folder (SciFact).")
    parser.add_argument(
        "--index",
        type=Path,
        default=Path(tempfile.gettempdir()) / "ragloom-bench" / "scifact-lexical.db",
        help="Index file to build or reuse.",
    )
    parser.add_argument("--rebuild", action="store_true", help="Re-index even if cached.")
    parser.add_argument("--url", help="Drive an already running server instead of starting one.")
    parser.add_argument("--token", help="Bearer token (when --url needs one).")
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--duration", type=float, default=20.0, help="Seconds of measured load.")
    parser.add_argument("--warmup", type=float, default=2.0, help="Unmeasured seconds first.")
    parser.add_argument("--top-k", type=int, default=3)
    parser.add_argument("--driver", choices=["raw", "httpx"], default="raw")
    parser.add_argument("--json", action="store_true", help="Also print the figures as JSON.")
    args = parser.parse_args(argv)

    queries = list(load_beir(args.data).queries.values())
    server: ServerProcess | None = None
    if args.url is None:
        docs = build_index(args.data, args.index, args.rebuild)
        console.print(f"index {args.index}: {docs} documents; {len(queries)} distinct queries")
        server = ServerProcess(args.index, env={"RAGLOOM_EMBEDDER": "none"})
        url = server.url
    else:
        url = args.url.rstrip("/")
    try:
        asyncio.run(drive(url, queries, args, args.warmup, Tally()))
        tally = Tally()
        client_start = time.process_time()
        server_start = cpu_seconds(server.process.pid) if server else 0.0
        asyncio.run(drive(url, queries, args, args.duration, tally))
        client_cpu = time.process_time() - client_start
        server_cpu = (cpu_seconds(server.process.pid) - server_start) if server else 0.0
    finally:
        if server is not None:
            server.stop()
    result = report(args, tally, client_cpu, server_cpu)
    if args.json:
        print(json.dumps(result, indent=2))
    return 1 if tally.errors else 0


if __name__ == "__main__":
    sys.exit(main())
