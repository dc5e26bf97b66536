"""`ragloom.Client`: the library's index/search calls over HTTP, against `ragloom serve`.

Errors come back typed: the server's error code picks the class (`NotFound`, `InputError`,
`StoreError`, `Unauthorized`, `Forbidden`, ...), so callers handle them as with the library.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import fields
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from ragloom.answer import AskResult
from ragloom.contract.options import DEFAULT_TOP_K
from ragloom.errors import RagloomError
from ragloom.index import IndexReport
from ragloom.loading.run import FileFailure
from ragloom.server.errors import ServerError, error_from_payload
from ragloom.types import Document, Hit, SearchResult


class ConnectionFailed(RagloomError):
    """The server could not be reached (not running, wrong port, timed out)."""

    code = "unreachable"


def _document_json(doc: Document | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(doc, Document):
        body: dict[str, Any] = {"id": doc.id, "text": doc.text, "metadata": doc.metadata}
        if doc.title is not None:
            body["title"] = doc.title
        if doc.source is not None:
            body["source"] = doc.source
        return body
    return dict(doc)


def _report(data: Mapping[str, Any]) -> IndexReport:
    """The library's report from the `/index` answer (see `IndexReport.to_dict`)."""
    skipped = [(s["path"], s["reason"]) for s in data.get("skipped", ())]
    failed = [
        FileFailure(f["path"], f["code"], f["reason"], f.get("hint"), f.get("offset"), f["line"])
        for f in data.get("failed", ())
    ]
    written = int(data["chunks_written"])
    return IndexReport(
        documents=data["documents"],
        unchanged=data["documents_unchanged"],
        chunks=written,
        files=data.get("files", 0),
        skipped=skipped,
        failed=failed,
        fragments=data.get("fragments", 0),
        unchanged_chunks=int(data["chunks"]) - written,
        pending=data.get("pending", 0),
        embedding_error=data.get("embedding_error"),
        embedding_seconds=data.get("embedding_seconds", 0.0),
        embedded=data.get("embedded", 0),
    )


_HIT_FIELDS = frozenset(f.name for f in fields(Hit))


def _hit(data: Mapping[str, Any]) -> Hit:
    values = {k: v for k, v in data.items() if k in _HIT_FIELDS}
    values["text"] = data["text"] if "text" in data else data["chunk"]  # older servers: chunk
    values.setdefault("metadata", {})
    values.setdefault("collection", "")
    return Hit(**values)


def _quote_id(doc_id: str) -> str:
    """Percent-encode a document id for the URL path (ids may hold `/`, `?`, `%`, dots)."""
    segments = quote(doc_id, safe="/").split("/")
    return "/".join(s.replace(".", "%2E") if s in (".", "..") else s for s in segments)


def _query_body(
    query: str, top_k: int, collection: str | None, controls: Mapping[str, Any]
) -> dict[str, Any]:
    body: dict[str, Any] = {"query": query, "top_k": top_k, **controls}
    if collection is not None:
        body["collection"] = collection
    return body


def _result(answer: Mapping[str, Any]) -> SearchResult:
    """The library's `SearchResult` from a `/query` answer."""
    hits = [_hit(r) for r in answer["results"]]
    mode = answer.get("mode") or "lexical"
    steps = {k: answer[k] for k in ("expansion", "rerank", "hops") if answer.get(k)}
    return SearchResult(
        hits,
        mode,
        bool(answer.get("degraded")),
        answer.get("reason"),
        steps,
        answer.get("total_tokens"),
    )


_ASK_FIELDS = frozenset(f.name for f in fields(AskResult))


def _ask_result(answer: Mapping[str, Any]) -> AskResult:
    """The library's `AskResult` from an `/ask` answer."""
    return AskResult(**{k: v for k, v in answer.items() if k in _ASK_FIELDS})


def server_events(lines: Iterable[str]) -> Iterator[tuple[str, Any]]:
    """(event name, JSON data) of each server-sent event in `lines`."""
    name, data = "message", list[str]()
    for line in lines:
        if not line:
            if data:
                yield name, json.loads("\n".join(data))
            name, data = "message", []
        elif line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())
    if data:
        yield name, json.loads("\n".join(data))


class Client:
    """A connection to a ragloom sidecar; reuses one HTTP connection pool. Thread-safe."""

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8181",
        token: str | None = None,
        timeout: float = 60.0,
    ) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.base_url = base_url.rstrip("/")
        self._settings: dict[str, Any] = {
            "base_url": self.base_url,
            "headers": headers,
            "timeout": timeout,
        }
        self._http = httpx.Client(**self._settings)

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        """One request; returns the JSON body or raises the typed error it carries."""
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.TransportError as exc:
            raise self._unreachable(method, path, exc) from None
        return self._answer(method, path, response)

    async def _acall(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        """`_call` on an async connection (one per call: it belongs to the running loop)."""
        try:
            async with httpx.AsyncClient(**self._settings) as http:
                response = await http.request(method, path, **kwargs)
        except httpx.TransportError as exc:
            raise self._unreachable(method, path, exc) from None
        return self._answer(method, path, response)

    def _unreachable(self, method: str, path: str, exc: httpx.TransportError) -> ConnectionFailed:
        if isinstance(exc, httpx.TimeoutException):
            return ConnectionFailed(
                f"{method} {self.base_url}{path} timed out: {exc}", "raise Client(timeout=...)"
            )
        return ConnectionFailed(
            f"cannot reach ragloom at {self.base_url}: {exc}", "is `ragloom serve` running?"
        )

    @staticmethod
    def _answer(method: str, path: str, response: httpx.Response) -> dict[str, Any]:
        try:
            payload = response.json()
        except ValueError:
            payload = None
        if response.is_success and isinstance(payload, dict):
            return payload
        if response.is_success:
            raise ServerError(f"{method} {path}: the server answered a non-JSON body")
        raise error_from_payload(response.status_code, payload)

    # -- the library's calls ------------------------------------------------------------
    def index_path(
        self,
        path: str | Path,
        collection: str | None = None,
        include: Iterable[str] = (),
        exclude: Iterable[str] = (),
        lenient: bool = False,
    ) -> IndexReport:
        """Index a file or folder on the server's machine (it must lie under a --root);
        `lenient` replaces invalid UTF-8 and skips bad JSONL lines, as in the library."""
        body: dict[str, Any] = {"path": str(path)}
        if collection is not None:
            body["collection"] = collection
        if include:
            body["include"] = list(include)
        if exclude:
            body["exclude"] = list(exclude)
        if lenient:
            body["lenient"] = True
        return _report(self._call("POST", "/index", json=body))

    def add(
        self, documents: Iterable[Document | Mapping[str, Any]], collection: str | None = None
    ) -> IndexReport:
        """Index inline documents (`Document`s or dicts with id, text, title?, metadata?)."""
        body: dict[str, Any] = {"documents": [_document_json(d) for d in documents]}
        if collection is not None:
            body["collection"] = collection
        return _report(self._call("POST", "/index", json=body))

    def query(
        self, query: str, top_k: int = DEFAULT_TOP_K, collection: str | None = None, **controls: Any
    ) -> dict[str, Any]:
        """The raw `/query` answer: `results` (dicts) and the `context`.

        `controls` are the request's other fields, as for `Index.search`: mode, fusion,
        rrf_k, weights, filters, boosts, diversity, prefer, strict, explain, tokens,
        `collections` / `budget` for labelled multi-collection, token-budgeted context, and
        the steps run by the server's LLM and reranker: expand ("llm" or "prf"),
        max_variants, merge, rerank (True), rerank_depth, hops.
        """
        return self._call("POST", "/query", json=_query_body(query, top_k, collection, controls))

    def search(
        self, query: str, top_k: int = DEFAULT_TOP_K, collection: str | None = None, **controls: Any
    ) -> SearchResult:
        """Hits for `query`, best first, as the library's `Hit` objects (with mode, degraded)."""
        return _result(self.query(query, top_k, collection, **controls))

    async def asearch(
        self, query: str, top_k: int = DEFAULT_TOP_K, collection: str | None = None, **controls: Any
    ) -> SearchResult:
        """`search` without blocking the event loop (an async HTTP connection)."""
        body = _query_body(query, top_k, collection, controls)
        return _result(await self._acall("POST", "/query", json=body))

    def context(
        self, query: str, top_k: int = DEFAULT_TOP_K, collection: str | None = None, **controls: Any
    ) -> str:
        """The prompt block: chunks joined with "\\n---\\n", or with `budget` / `collections`
        a numbered, cited context."""
        return str(self.query(query, top_k, collection, **controls)["context"])

    def ask(
        self,
        question: str,
        top_k: int = DEFAULT_TOP_K,
        collection: str | None = None,
        **options: Any,
    ) -> AskResult:
        """The server's answer (`POST /ask`) as the library's `AskResult`; `options` as for
        `Index.ask` (history, max_rounds, min_relevance, max_tokens, show_prompt, budget,
        strict and the search controls)."""
        body = {**_query_body(question, top_k, collection, options), "question": question}
        del body["query"]
        return _ask_result(self._call("POST", "/ask", json=body))

    def ask_stream(
        self,
        question: str,
        top_k: int = DEFAULT_TOP_K,
        collection: str | None = None,
        **options: Any,
    ) -> Iterator[str | AskResult]:
        """`ask` as the server streams it: text pieces, then the `AskResult`."""
        body = {**_query_body(question, top_k, collection, options), "question": question}
        del body["query"]
        body["stream"] = True
        try:
            with self._http.stream("POST", "/ask", json=body) as response:
                if not response.is_success:
                    response.read()
                    self._answer("POST", "/ask", response)
                for event, data in server_events(response.iter_lines()):
                    if event == "text":
                        yield data["text"]
                    elif event == "done":
                        yield _ask_result(data)
                    elif event == "error":
                        raise error_from_payload(502, data)
        except httpx.TransportError as exc:
            raise self._unreachable("POST", "/ask", exc) from None

    def delete(self, doc_id: str, collection: str | None = None) -> int:
        """Delete a document; returns the number of chunks removed (`NotFound` if unknown)."""
        params = {"collection": collection} if collection is not None else None
        path = "/documents/" + _quote_id(doc_id)
        return int(self._call("DELETE", path, params=params)["chunks"])

    def documents(
        self, collection: str | None = None, offset: int = 0, limit: int = 100
    ) -> list[dict[str, Any]]:
        """A page of stored documents."""
        params: dict[str, Any] = {"offset": offset, "limit": limit}
        if collection is not None:
            params["collection"] = collection
        return list(self._call("GET", "/documents", params=params)["documents"])

    def stats(self) -> dict[str, Any]:
        """Counts per collection plus lexical statistics."""
        return self._call("GET", "/stats")

    def health(self) -> dict[str, Any]:
        """Whether the server is up (needs no token); version and index counts with the token."""
        return self._call("GET", "/health")
