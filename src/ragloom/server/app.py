"""The FastAPI application: routes, error handlers, Host, token and body-size middleware."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from starlette.responses import Response

from ragloom.errors import StoreError, WriterBusy
from ragloom.server import capabilities, handlers
from ragloom.server.asking import build_ask_router
from ragloom.server.auth import OPEN_PATHS, BearerAuth
from ragloom.server.holder import IndexHolder
from ragloom.server.hosts import HostCheck, allowed_names
from ragloom.server.inspector import build_inspector
from ragloom.server.jobs import IndexJobs
from ragloom.server.limits import BodyLimit
from ragloom.server.metrics import CONTENT_TYPE, RequestMetrics, ServerMetrics
from ragloom.server.pending import PendingFiller
from ragloom.server.routes import build_router
from ragloom.server.settings import ServerSettings
from ragloom.server.worker import BatchWorker
from ragloom.version import __version__
from ragloom.watch import Watcher

log = logging.getLogger("uvicorn.error")

QUERY_THREADS = 2  # more than one: a query waiting on an embedding service stalls no other
INDEX_JOBS = 2  # concurrent /index jobs; the rest queue without taking query threads


def create_app(settings: ServerSettings) -> FastAPI:
    """Build the sidecar app for one configuration (the index opens at startup)."""
    holder = IndexHolder(settings.index_path, settings.embedder, settings.llm, settings.reranker)
    worker = BatchWorker(threads=QUERY_THREADS)
    metrics = ServerMetrics(holder)
    jobs = IndexJobs(INDEX_JOBS, settings.index_timeout)

    filler = PendingFiller(
        lambda limit: holder.get().fill_pending(limit=limit),
        lambda: holder.get().pending(),
    )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        with suppress(StoreError):  # reported by /health and as 503s; the server still starts
            holder.get().warm()  # load segments and models now, not on the first query
        app.state.watcher = start_watching(holder, settings)  # WriterBusy: no start
        filler.start()  # embeds chunks indexed while the embedding service was down
        yield
        if app.state.watcher is not None:
            app.state.watcher.stop()  # writes what is queued
        jobs.stop_all()  # running /index jobs stop at their next file or block
        filler.stop()
        worker.close()
        metrics.close()
        holder.close()

    app = FastAPI(
        title="ragloom",
        version=__version__,
        summary="Local retrieval sidecar: index your material, query the passages a prompt needs.",
        lifespan=lifespan,
        docs_url="/docs",
        redoc_url=None,
    )
    app.state.holder = holder
    app.state.watcher = None
    app.state.settings = settings
    app.state.metrics = metrics
    app.include_router(build_router(holder, settings, worker, jobs, metrics))
    app.include_router(build_ask_router(holder, settings.roots))
    app.include_router(build_inspector())

    @app.get("/metrics", include_in_schema=False)
    def prometheus_metrics() -> Response:
        """Prometheus metrics (text format); behind the token like every other endpoint."""
        return Response(metrics.render(), media_type=CONTENT_TYPE)

    handlers.install(app)
    app.add_middleware(handlers.CatchAll)
    app.add_middleware(BodyLimit, max_body=settings.max_body)
    if settings.token:
        app.add_middleware(BearerAuth, token=settings.token)
    app.add_middleware(RequestMetrics, metrics=metrics)  # counts 401s and 413s too
    # Outermost: a request for another host is refused before anything else looks at it.
    app.add_middleware(HostCheck, names=allowed_names(settings.host, settings.allowed_hosts))
    app.openapi = lambda: _openapi(app, settings)  # type: ignore[method-assign]
    return app


def start_watching(holder: IndexHolder, settings: ServerSettings) -> Watcher | None:
    """The watcher of `--watch` folders, started (its first sweep runs on its own thread,
    so the server answers meanwhile); None without `--watch`."""
    if not settings.watch:
        return None
    watcher = Watcher(holder.get(), settings.watch, policy=settings.read_policy)
    try:
        watcher.start(background=True)
    except WriterBusy as exc:
        log.error("cannot watch: %s (%s)", exc.message, exc.hint)
        raise
    return watcher


def _drop_default_validation_errors(schema: dict[str, Any]) -> None:
    """FastAPI declares a 422 with its own error shape on every operation; validation errors
    here are 400 `bad_request` in the ErrorResponse envelope (declared by the routes)."""
    for operations in schema.get("paths", {}).values():
        for operation in operations.values():
            operation.get("responses", {}).pop("422", None)
    models = schema.get("components", {}).get("schemas", {})
    for name in ("HTTPValidationError", "ValidationError"):
        models.pop(name, None)


def _openapi(app: FastAPI, settings: ServerSettings) -> dict[str, Any]:
    """The OpenAPI schema, without the search steps this server has no service for; with a
    token, every operation but /health declares bearer auth."""
    if app.openapi_schema:
        return app.openapi_schema
    schema = get_openapi(
        title=app.title, version=app.version, summary=app.summary, routes=app.routes
    )
    _drop_default_validation_errors(schema)
    capabilities.narrow(schema, *capabilities.services(settings))
    if settings.token:
        components = schema.setdefault("components", {})
        components.setdefault("securitySchemes", {})["bearer"] = {
            "type": "http",
            "scheme": "bearer",
        }
        unauthorized = {
            "description": "Missing or wrong bearer token",
            "content": {
                "application/json": {"schema": {"$ref": "#/components/schemas/ErrorResponse"}}
            },
        }
        for path, operations in schema["paths"].items():
            if path in OPEN_PATHS:
                continue
            for operation in operations.values():
                operation["security"] = [{"bearer": []}]
                operation["responses"]["401"] = unauthorized
    app.openapi_schema = schema
    return schema
