"""Prometheus metrics of one sidecar: requests, latency per endpoint and search stage, index
sizes, pending vectors and embedding-service failures (`GET /metrics`, text format).

Each app has its own registry, so several apps in one process (tests) never share counts.
Index sizes are read from `Index.stats()` when Prometheus scrapes, never kept up to date.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ragloom.errors import RagloomError, StoreError
from ragloom.observe import on_embedding_failure
from ragloom.server.holder import IndexHolder
from ragloom.server.middleware import HttpMiddleware
from ragloom.timing import STAGES

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# Sidecar requests take from well under a millisecond (a cached lexical query) to minutes
# (indexing a folder): buckets span both ends.
REQUEST_BUCKETS: tuple[float, ...] = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1)
REQUEST_BUCKETS += (0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)
STAGE_BUCKETS: tuple[float, ...] = (0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005)
STAGE_BUCKETS += (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5)


class IndexCollector(Collector):
    """Gauges of the index's size per collection, read at scrape time."""

    def __init__(self, holder: IndexHolder) -> None:
        self.holder = holder

    def collect(self) -> Iterator[GaugeMetricFamily]:
        families = {
            key: GaugeMetricFamily(f"ragloom_index_{key}", text, labels=["collection"])
            for key, text in (
                ("documents", "Documents stored per collection."),
                ("chunks", "Chunks stored per collection."),
                ("vectors", "Chunks with a vector per collection."),
                ("pending_vectors", "Chunks of an embedded collection still waiting for a vector."),
            )
        }
        up = GaugeMetricFamily("ragloom_index_up", "1 when the index file is open and readable.")
        try:
            collections = self.holder.get().stats()["collections"]
        except StoreError:
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        for name, counts in collections.items():
            for key in ("documents", "chunks", "vectors"):
                families[key].add_metric([name], counts.get(key, 0))
            families["pending_vectors"].add_metric([name], counts.get("pending", 0))
        yield from families.values()


class ServerMetrics:
    """The sidecar's metrics registry and the hooks that feed it."""

    def __init__(self, holder: IndexHolder) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "ragloom_requests",
            "HTTP requests answered, per endpoint (route template), method and status.",
            ["endpoint", "method", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "ragloom_request_seconds",
            "Time to answer an HTTP request, per endpoint and method.",
            ["endpoint", "method"],
            buckets=REQUEST_BUCKETS,
            registry=self.registry,
        )
        self.stages = Histogram(
            "ragloom_search_stage_seconds",
            f"Time of each search stage ({', '.join(STAGES)}) of /query searches.",
            ["stage"],
            buckets=STAGE_BUCKETS,
            registry=self.registry,
        )
        self.embedding_failures = Counter(
            "ragloom_embedding_failures",
            "Failed calls to the embedding service (offline or answering badly), per code.",
            ["code"],
            registry=self.registry,
        )
        self.degraded = Counter(
            "ragloom_degraded_searches",
            "Searches answered by the lexical leg alone because the dense leg failed.",
            registry=self.registry,
        )
        self.registry.register(IndexCollector(holder))
        self._unsubscribe: Callable[[], None] | None = on_embedding_failure(self._failed)

    def _failed(self, error: RagloomError) -> None:
        self.embedding_failures.labels(error.code).inc()

    def observe_search(self, timings: Mapping[str, float] | None, degraded: bool) -> None:
        """Record one search's stage timings (milliseconds, as `SearchResult.timings`)."""
        if degraded:
            self.degraded.inc()
        for stage, ms in (timings or {}).items():
            if stage != "total":
                self.stages.labels(stage).observe(ms / 1000.0)

    def render(self) -> bytes:
        """The registry in Prometheus' text format."""
        return generate_latest(self.registry)

    def close(self) -> None:
        """Stop listening for embedding failures (at shutdown)."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None


class RequestMetrics(HttpMiddleware):
    """ASGI middleware counting every HTTP request and timing it, by route template (so
    `/documents/{doc_id}` is one series however many ids are asked for)."""

    def __init__(self, app: ASGIApp, metrics: ServerMetrics) -> None:
        super().__init__(app)
        self.metrics = metrics

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        status = 500
        started = time.perf_counter()

        async def recording_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, recording_send)
        finally:
            route = scope.get("route")
            endpoint = getattr(route, "path", None) or "unmatched"
            method = scope.get("method", "")
            self.metrics.requests.labels(endpoint, method, str(status)).inc()
            self.metrics.latency.labels(endpoint, method).observe(time.perf_counter() - started)
