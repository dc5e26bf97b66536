"""The endpoints: thin adapters from JSON to the library's Index calls (nothing re-implemented).

Blocking Index calls never run on the event loop: searches go to the batching query threads
(`worker.py`), indexing jobs to the threadpool behind their own limiter, the rest to the
threadpool (plain `def` endpoints), so queries keep being answered while a long `/index` runs.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import anyio
from fastapi import APIRouter, Query

from ragloom import __version__
from ragloom.context import PackedContext
from ragloom.errors import NotFound, StoreError
from ragloom.index import DEFAULT_COLLECTION, Index
from ragloom.models import Document, SearchResult
from ragloom.server import schemas
from ragloom.server.holder import IndexHolder
from ragloom.server.paths import confine
from ragloom.server.responses import JSONResponse
from ragloom.server.settings import ServerSettings
from ragloom.server.worker import BatchWorker

CONTEXT_SEPARATOR = "\n---\n"
INDEX_JOBS = 2  # concurrent /index jobs; the rest queue without taking query threads

_ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": schemas.ErrorResponse, "description": text}
    for status, text in (
        (
            400,
            "Malformed JSON (bad_json), or a field missing, unknown or of the wrong type"
            " (bad_request), or unusable input (bad_input, invalid_utf8, bad_record)",
        ),
        (413, "Body over the size limit"),
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
        502: "The embedding service answered badly (embed_failed)",
    }
    out = dict(_ERRORS)
    for status in statuses:
        out[status] = {"model": schemas.ErrorResponse, "description": extra[status]}
    return out


def _empty_index(index: Index) -> bool:
    """True when no collection exists yet: reads then answer empty instead of 404."""
    return not index.collections()


def _run_index(holder: IndexHolder, settings: ServerSettings, body: schemas.IndexRequest) -> dict:
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
        real = confine(body.path, settings.roots, body.include, body.exclude)
        file = str(real)
        report = index.index_path(
            real,
            collection,
            include=body.include,
            exclude=body.exclude,
            lenient=body.lenient,
            enrichers=enrichers,
        )
    else:
        documents = [
            Document(id=d.id, text=d.text, title=d.title, source=d.source, metadata=d.metadata)
            for d in body.documents or ()
        ]
        report = index.add(documents, collection=collection, enrichers=enrichers)
    return {"ok": True, "collection": collection, "file": file, **report.to_dict()}


def _search(holder: IndexHolder, body: schemas.QueryRequest) -> dict[str, Any]:
    """Run a /query: one collection or several, optionally packed into a cited context."""
    index = holder.get()
    shared = {"explain": body.explain, "with_tokens": body.tokens}
    with index.reading() as reader:  # hits and their packed context: one version
        if body.collections:
            return _search_many(reader, body, shared)
        collection = body.collection or DEFAULT_COLLECTION
        try:
            hits = reader.search(
                body.query,
                top_k=body.top_k,
                collection=collection,
                **body.search_kwargs(),
                **shared,
            )
        except NotFound:
            if not _empty_index(index):
                raise
            hits = SearchResult([], body.mode or "lexical")
        packed = reader.pack([(None, list(hits))], body.budget) if body.budget else None
    answer: dict[str, Any] = {"ok": True, "results": [hit.to_dict() for hit in hits]}
    if packed is not None:
        answer.update(_packed(packed))
    else:
        answer["context"] = CONTEXT_SEPARATOR.join(h.text for h in hits)
    answer.update(
        mode=hits.mode,
        degraded=hits.degraded,
        reason=hits.reason,
        dense_floor=hits.dense_floor,
        below_floor=hits.below_floor,
    )
    return answer


def _search_many(reader: Any, body: schemas.QueryRequest, shared: dict[str, Any]) -> dict[str, Any]:
    requests = [
        {
            "collection": c.collection,
            "top_k": c.top_k,
            "label": c.label,
            **c.search_kwargs(),
            **shared,
        }
        for c in body.collections or []
    ]
    result = reader.search_many(body.query, requests)
    sections = [(g.label, list(g.hits)) for g in result.groups]
    return {
        "ok": True,
        "results": [hit.to_dict() for hit in result.merged],
        "groups": [
            {
                "collection": g.collection,
                "label": g.label,
                "mode": g.hits.mode,
                "degraded": g.hits.degraded,
                "reason": g.hits.reason,
                "results": [hit.to_dict() for hit in g.hits],
            }
            for g in result.groups
        ],
        **_packed(reader.pack(sections, body.budget)),
        "degraded": result.degraded,
    }


def _packed(packed: PackedContext) -> dict[str, Any]:
    data = packed.to_dict()
    return {"context": data["text"], "context_tokens": data["tokens"], "passages": data["passages"]}


def build_router(holder: IndexHolder, settings: ServerSettings, worker: BatchWorker) -> APIRouter:
    """All endpoints, bound to one IndexHolder, configuration and query worker."""
    router = APIRouter()
    limiter: list[anyio.CapacityLimiter] = []

    @router.post(
        "/index", response_model=schemas.IndexResponse, responses=_errors(403, 404, 409, 502)
    )
    async def index_documents(body: schemas.IndexRequest) -> JSONResponse:
        """Index a file or folder under a configured root, or inline documents."""
        if not limiter:
            limiter.append(anyio.CapacityLimiter(INDEX_JOBS))
        job = partial(_run_index, holder, settings, body)
        return JSONResponse(await anyio.to_thread.run_sync(job, limiter=limiter[0]))

    @router.post("/query", response_model=schemas.QueryResponse, responses=_errors(404, 409, 502))
    async def query(body: schemas.QueryRequest) -> JSONResponse:
        """The best chunks for a query, plus them joined as a ready-to-paste context.

        An empty index (no collection yet) answers ok with no results, and so does the
        "default" collection before anything went into it; once any collection exists, naming
        another one that does not is 404.
        """
        return JSONResponse(await worker.run(partial(_search, holder, body)))

    @router.delete(
        "/documents/{doc_id:path}", response_model=schemas.DeleteResponse, responses=_errors(404)
    )
    def delete_document(doc_id: str, collection: str = DEFAULT_COLLECTION) -> JSONResponse:
        """Delete a document and every chunk of it."""
        removed = holder.get().delete(doc_id, collection=collection)
        return JSONResponse({"ok": True, "id": doc_id, "collection": collection, "chunks": removed})

    @router.get("/documents", response_model=schemas.DocumentsResponse, responses=_errors(404))
    def list_documents(
        collection: str | None = None,
        offset: int = Query(0, ge=0, le=schemas.MAX_OFFSET),
        limit: int = Query(100, ge=1, le=schemas.MAX_PAGE),
    ) -> JSONResponse:
        """A page of stored documents (ordered by collection, then id)."""
        index = holder.get()
        counts = index.stats()["collections"]
        if not counts:  # empty index: nothing to list yet, whatever the collection
            return JSONResponse(
                {"ok": True, "documents": [], "offset": offset, "limit": limit, "total": 0}
            )
        docs = index.documents(collection, offset=offset, limit=limit)
        names = [collection] if collection is not None else list(counts)
        total = sum(counts[n]["documents"] for n in names if n in counts)
        page = [
            {
                "id": d.doc_id,
                "collection": d.collection,
                "source": d.source,
                "title": d.title,
                "metadata": d.metadata,
                "chunks": d.chunks,
                "content_hash": d.content_hash,
                "indexed_at": d.indexed_at,
                "pending": d.pending,
            }
            for d in docs
        ]
        return JSONResponse(
            {"ok": True, "documents": page, "offset": offset, "limit": limit, "total": total}
        )

    @router.get("/stats", response_model=schemas.StatsResponse, responses=_errors())
    def stats() -> JSONResponse:
        """Counts per collection plus lexical statistics."""
        return JSONResponse({"ok": True, **holder.get().stats()})

    @router.get(
        "/health",
        response_model=schemas.HealthResponse,
        responses={503: {"model": schemas.HealthResponse, "description": "Index unavailable"}},
    )
    def health() -> JSONResponse:
        """Liveness and index status (never needs the token)."""
        status: dict[str, Any] = {"path": str(holder.path), "open": False}
        try:
            data = holder.get().stats()
        except StoreError as exc:
            status["error"] = exc.message
            return JSONResponse(
                {"ok": False, "version": __version__, "index": status}, status_code=503
            )
        status.update(
            open=True,
            collections=len(data["collections"]),
            documents=data["documents"],
            chunks=data["chunks"],
            pending=data["pending"],
        )
        return JSONResponse({"ok": True, "version": __version__, "index": status})

    return router
