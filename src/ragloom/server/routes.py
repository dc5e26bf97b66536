"""The endpoints: thin adapters from JSON to the library's Index calls (nothing re-implemented).

Blocking Index calls never run on the event loop: searches go to the batching query threads
(`worker.py`), indexing jobs to their own slots with a time limit (`jobs.py`), the rest to the
threadpool (plain `def` endpoints), so queries keep being answered while a long `/index` runs.
Every `source` going out is relative to its root (`paths.public_path`).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Query, Request

from ragloom.context import PackedContext
from ragloom.errors import NotFound, StoreError
from ragloom.index import DEFAULT_COLLECTION, Index, IndexReading
from ragloom.loading import StopSignal
from ragloom.server import requests as bodies
from ragloom.server import schemas
from ragloom.server.auth import token_matches
from ragloom.server.holder import IndexHolder
from ragloom.server.jobs import IndexJobs
from ragloom.server.metrics import ServerMetrics
from ragloom.server.paths import confine, public_path
from ragloom.server.responses import JSONResponse
from ragloom.server.settings import ServerSettings
from ragloom.server.worker import BatchWorker
from ragloom.store.open import location_label
from ragloom.types import Document, Hit, SearchResult
from ragloom.version import __version__

CONTEXT_SEPARATOR = "\n---\n"

_ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": schemas.ErrorResponse, "description": text}
    for status, text in (
        (
            400,
            "Malformed JSON (bad_json), or a field missing, unknown or of the wrong type"
            " (bad_request), or unusable input (bad_input, invalid_utf8, bad_record)",
        ),
        (413, "Body over the size limit"),
        (421, "Host header not answered here (bad_host: DNS rebinding protection)"),
        (415, "Body is not JSON"),
        (500, "Unexpected server error"),
        (503, "Index unavailable"),
    )
}


def _errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    extra = {
        404: "Unknown document or collection",
        403: "Path outside the allowed roots",
        409: "The collection cannot serve this (no vectors, or another model's vectors)",
        502: "A service answered badly (embed_failed; with strict: llm_failed, rerank_failed)",
        504: "The indexing job ran past its time limit (timeout)",
    }
    out = dict(_ERRORS)
    for status in statuses:
        out[status] = {"model": schemas.ErrorResponse, "description": extra[status]}
    return out


def _empty_index(index: Index) -> bool:
    """True when no collection exists yet: reads then answer empty instead of 404."""
    return not index.collections()


def _public(hits: Sequence[Hit], roots: Sequence[Path]) -> list[Hit]:
    """Copies of hits whose `source` is shown relative to its root."""
    return [dataclasses.replace(h, source=public_path(h.source, roots)) for h in hits]


def _run_index(
    holder: IndexHolder, settings: ServerSettings, body: bodies.IndexRequest, stop: StopSignal
) -> dict:
    index = holder.get()
    collection = body.collection or DEFAULT_COLLECTION
    file = None
    if body.chunking is not None or body.title_weight is not None:
        chunking = body.chunking.model_dump() if body.chunking is not None else None
        index.configure(collection, chunking=chunking, title_weight=body.title_weight)
    enrichers: list[Any] = []
    if body.enrich is not None and body.enrich.novel is not None:
        from ragloom.enrich.novel import novel_enrichers

        novel = body.enrich.novel
        enrichers = novel_enrichers(novel.characters, novel.importance_base)
    if body.path is not None:
        real = confine(body.path, settings.roots)
        file = public_path(str(real), settings.roots)
        report = index.index_path(
            real,
            collection,
            include=body.include,
            exclude=body.exclude,
            lenient=body.lenient,
            keep_missing=body.keep_missing,
            include_ignored=body.include_ignored,
            enrichers=enrichers,
            policy=settings.read_policy,
            stop=stop,
        )
        if report.failed and not os.path.isdir(real) and report.failed[0].error is not None:
            raise report.failed[0].error  # one file asked for: its error is the answer
    else:
        documents = [
            Document(id=d.id, text=d.text, title=d.title, source=d.source, metadata=d.metadata)
            for d in body.documents or ()
        ]
        report = index.add(documents, collection=collection, enrichers=enrichers)
    return {"ok": True, "collection": collection, "file": file, **report.to_dict("http")}


def _search(
    holder: IndexHolder,
    body: bodies.QueryRequest,
    roots: Sequence[Path],
    metrics: ServerMetrics | None = None,
) -> dict[str, Any]:
    """Run a /query: one collection or several, optionally packed into a cited context, in
    one version of the index (`Index.read`: run again if the store lost its connection)."""
    index = holder.get()
    if body.collections:
        answer = index.read(lambda reader: _search_many(reader, body, roots))
        if metrics is not None:
            for group in answer["groups"]:
                metrics.observe_search(group.get("timings"), group["degraded"])
        return answer
    answer = index.read(lambda reader: _search_one(index, reader, body, roots))
    if metrics is not None:
        metrics.observe_search(answer["timings"], answer["degraded"])
    return answer


def _search_one(
    index: Index, reader: IndexReading, body: bodies.QueryRequest, roots: Sequence[Path]
) -> dict[str, Any]:
    """One collection's hits (sources relative to their roots) and their context."""
    try:
        found = reader.search(
            body.query,
            top_k=body.top_k,
            collection=body.collection or DEFAULT_COLLECTION,
            **body.search_kwargs(),
            **_shared(body),
        )
    except NotFound:
        if not _empty_index(index):
            raise
        found = SearchResult([], body.mode or "lexical")
    result = found.with_hits(_public(found, roots))
    answer: dict[str, Any] = {"ok": True, **result.to_dict(), "timings": result.timings}
    answer["results"] = [_wire(hit) for hit in answer["results"]]
    if body.budget:
        answer.update(_packed(reader.pack([(None, list(result))], body.budget)))
    else:
        answer["context"] = CONTEXT_SEPARATOR.join(h.text for h in result)
    return answer


def _wire(hit: dict[str, Any]) -> dict[str, Any]:
    """A hit as HTTP answers it: `text`, and again as `chunk`, the name HTTP clients written
    before `text` read (kept for them; the library and `--json` say only `text`)."""
    return {**hit, "chunk": hit["text"]}


def _shared(body: bodies.QueryRequest) -> dict[str, Any]:
    """The search options a /query gives every collection it searches."""
    return {"explain": body.explain, "tokens": body.tokens}


def _search_many(
    reader: IndexReading, body: bodies.QueryRequest, roots: Sequence[Path]
) -> dict[str, Any]:
    # The body's own controls apply to every collection that does not set them, as the
    # library's `search_many` shared keywords do.
    shared = {**body.search_kwargs(given_only=True), **_shared(body)}
    requests = [
        {
            "collection": c.collection,
            "top_k": c.top_k,
            "label": c.label,
            **c.search_kwargs(),
            **shared,
            **c.search_kwargs(given_only=True),
        }
        for c in body.collections or []
    ]
    result = reader.search_many(body.query, requests)
    groups = [(g, _public(g.hits, roots)) for g in result.groups]
    sections = [(g.label, hits) for g, hits in groups]
    return {
        "ok": True,
        "results": [_wire(hit.to_dict()) for hit in _public(result.merged, roots)],
        "groups": [
            {
                "collection": g.collection,
                "label": g.label,
                "mode": g.hits.mode,
                "degraded": g.hits.degraded,
                "reason": g.hits.reason,
                "results": [_wire(hit.to_dict()) for hit in hits],
                "timings": g.hits.timings,
                "dense_floor": g.hits.dense_floor,
                "below_floor": g.hits.below_floor,
            }
            for g, hits in groups
        ],
        **_packed(reader.pack(sections, body.budget)),
        "degraded": result.degraded,
    }


def _packed(packed: PackedContext) -> dict[str, Any]:
    data = packed.to_dict()
    return {"context": data["text"], "context_tokens": data["tokens"], "passages": data["passages"]}


def _document_page(
    index: Any, collection: str | None, offset: int, limit: int, roots: Any
) -> dict[str, Any]:
    """One page of `GET /documents`: the stored documents with their public paths."""
    counts = index.stats()["collections"]
    if not counts:  # empty index: nothing to list yet, whatever the collection
        return {"ok": True, "documents": [], "offset": offset, "limit": limit, "total": 0}
    docs = index.documents(collection, offset=offset, limit=limit)
    names = [collection] if collection is not None else list(counts)
    total = sum(counts[n]["documents"] for n in names if n in counts)
    page = [
        {
            "id": d.doc_id,
            "collection": d.collection,
            "source": public_path(d.source, roots),
            "title": d.title,
            "metadata": d.metadata,
            "chunks": d.chunks,
            "content_hash": d.content_hash,
            "indexed_at": d.indexed_at,
            "pending": d.pending,
        }
        for d in docs
    ]
    return {"ok": True, "documents": page, "offset": offset, "limit": limit, "total": total}


def _health(holder: IndexHolder, settings: ServerSettings, request: Request) -> JSONResponse:
    """`GET /health`: liveness for anyone; counts (and replicas, shards) with the token."""
    try:
        data = holder.get().stats()
        error = None
    except StoreError as exc:
        data, error = {}, exc.message
    status_code = 503 if error is not None else 200
    header = request.headers.get("authorization", "").encode("latin-1", "replace")
    token = settings.token
    holds_token = bool(token) and token_matches(header, (token or "").encode("utf-8"))
    watching = _watching(request) if holds_token or not settings.token else None
    if not holds_token:
        extra = {"watch": watching} if watching else {}
        return JSONResponse({"ok": error is None, **extra}, status_code=status_code)
    status: dict[str, Any] = {"path": location_label(holder.path), "open": error is None}
    if error is not None:
        status["error"] = error
    else:
        status.update(
            collections=len(data["collections"]),
            documents=data["documents"],
            chunks=data["chunks"],
            pending=data["pending"],
        )
        for part in ("replicas", "shards"):
            if part in data:
                status[part] = data[part]
    body = {"ok": error is None, "version": __version__, "index": status}
    if watching:
        body["watch"] = watching
    return JSONResponse(body, status_code=status_code)


def _watching(request: Request) -> dict[str, Any] | None:
    """The `--watch` watcher's state, its folders by name only (as sources are shown)."""
    watcher = getattr(request.app.state, "watcher", None)
    if watcher is None:
        return None
    state = watcher.describe()
    state["folders"] = [Path(folder).name for folder in state["folders"]]
    return state


def build_router(
    holder: IndexHolder,
    settings: ServerSettings,
    worker: BatchWorker,
    jobs: IndexJobs,
    metrics: ServerMetrics | None = None,
) -> APIRouter:
    """All endpoints, bound to one IndexHolder, configuration, query worker, index jobs and
    metrics."""
    router = APIRouter()
    roots = settings.roots

    @router.post(
        "/index",
        response_model=schemas.IndexResponse,
        responses=_errors(403, 404, 409, 502, 504),
    )
    async def index_documents(body: bodies.IndexRequest) -> JSONResponse:
        """Index a file or folder under a configured root, or inline documents.

        A folder indexes every good file and lists the others in `failed` (with reason, byte
        offset and line) and `skipped`; a single file that fails answers its typed error.
        """
        return JSONResponse(await jobs.run(partial(_run_index, holder, settings, body)))

    @router.post("/query", response_model=schemas.QueryResponse, responses=_errors(404, 409, 502))
    async def query(body: bodies.QueryRequest) -> JSONResponse:
        """The best chunks for a query, plus them joined as a ready-to-paste context.

        An empty index (no collection yet) answers ok with no results, and so does the
        "default" collection before anything went into it; once any collection exists, naming
        another one that does not is 404.
        """
        return JSONResponse(await worker.run(partial(_search, holder, body, roots, metrics)))

    @router.delete(
        "/documents/{doc_id:path}", response_model=schemas.DeleteResponse, responses=_errors(404)
    )
    def delete_document(doc_id: str, collection: str = DEFAULT_COLLECTION) -> JSONResponse:
        """Delete a document and every chunk of it."""
        removed = holder.get().delete(doc_id, collection=collection)
        return JSONResponse({"ok": True, "id": doc_id, "collection": collection, "chunks": removed})

    @router.get(
        "/documents/{doc_id:path}", response_model=schemas.DocumentResponse, responses=_errors(404)
    )
    def get_document(doc_id: str, collection: str = DEFAULT_COLLECTION) -> JSONResponse:
        """A stored document's full text (hits' `start`/`end` offsets index into it)."""
        text = holder.get().document_text(doc_id, collection)
        return JSONResponse({"ok": True, "id": doc_id, "collection": collection, "text": text})

    @router.get("/documents", response_model=schemas.DocumentsResponse, responses=_errors(404))
    def list_documents(
        collection: str | None = None,
        offset: int = Query(0, ge=0, le=bodies.MAX_OFFSET),
        limit: int = Query(100, ge=1, le=bodies.MAX_PAGE),
    ) -> JSONResponse:
        """A page of stored documents (ordered by collection, then id)."""
        return JSONResponse(_document_page(holder.get(), collection, offset, limit, roots))

    @router.get("/stats", response_model=schemas.StatsResponse, responses=_errors())
    def stats() -> JSONResponse:
        """Counts per collection plus lexical statistics."""
        return JSONResponse({"ok": True, **holder.get().stats()})

    @router.get(
        "/health",
        response_model=schemas.HealthResponse,
        responses={503: {"model": schemas.HealthResponse, "description": "Index unavailable"}},
    )
    def health(request: Request) -> JSONResponse:
        """Liveness (never needs the token); counts only for a caller with the valid token."""
        return _health(holder, settings, request)

    return router
