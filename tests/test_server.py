"""The HTTP sidecar over real HTTP: `ragloom serve` runs as a subprocess on a loopback port."""

from __future__ import annotations

import json
import random
import sqlite3
import threading
import time
from pathlib import Path

import httpx
import pytest

import ragloom
from tests.server_launch import ServerProcess

MAX_BODY = 1_000_000
BIG_FILES = 600
BIG_FILE_WORDS = 4000  # enough that indexing the folder lasts seconds, so queries overlap it


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A root folder with clean notes, a bad file, symlink escapes and a big folder."""
    base = tmp_path_factory.mktemp("tree")
    root, outside = base / "root", base / "outside"
    (root / "notes").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.txt").write_text("the secret passphrase is swordfish\n")
    (root / "notes" / "lore.md").write_text(
        "# Lore\n\nAelwen the ranger guards the northern pass of Karsh.\n"
    )
    (root / "notes" / "places.txt").write_text("Karsh is a fortress city carved into basalt.\n")
    (root / "bad").mkdir()
    (root / "bad" / "broken.txt").write_bytes(b"fine start \xff\xfe then garbage\n")
    (root / "links").mkdir()
    (root / "links" / "ok.txt").write_text("an honest file\n")
    (root / "links" / "leak.txt").symlink_to(outside / "secret.txt")
    (root / "filelink.txt").symlink_to(outside / "secret.txt")
    (root / "dirlink").symlink_to(outside, target_is_directory=True)
    big = root / "big"
    big.mkdir()
    rng = random.Random(7)
    words = [f"term{i}" for i in range(5000)]
    for i in range(BIG_FILES):
        text = " ".join(rng.choices(words, k=BIG_FILE_WORDS))
        (big / f"doc{i:04d}.txt").write_text(f"{text} bigmarker{i}\n")
    return {"base": base, "root": root, "outside": outside, "big": big}


@pytest.fixture(scope="module")
def server(tree: dict[str, Path]):
    env = {"RAGLOOM_EMBEDDER": "none"}  # lexical only: these tests are about HTTP, not models
    index = tree["base"] / "index.db"
    with ServerProcess(index, roots=[tree["root"]], max_body=MAX_BODY, env=env) as srv:
        yield srv


@pytest.fixture(scope="module")
def http(server: ServerProcess):
    with httpx.Client(base_url=server.url, timeout=60) as client:
        yield client


PYDANTIC_INTERNALS = ("body.", "function-after", "constrained-", "list[", "Input should", "[key]")


def _error(response: httpx.Response, status: int, code: str | None = None) -> dict:
    """Assert a typed JSON error (`error` a plain message, `code` and `hint` beside it) and
    return the whole body."""
    assert response.status_code == status, response.text
    body = response.json()
    assert body["ok"] is False
    assert isinstance(body["error"], str) and body["error"]
    assert isinstance(body["code"], str) and "hint" in body
    assert body["hint"] is None or isinstance(body["hint"], str)
    if code is not None:
        assert body["code"] == code
    assert "Traceback" not in response.text
    assert not any(internal in body["error"] for internal in PYDANTIC_INTERNALS), body["error"]
    return body


def _add(http: httpx.Client, docs: list[dict], collection: str | None = None) -> dict:
    body: dict = {"documents": docs}
    if collection:
        body["collection"] = collection
    response = http.post("/index", json=body)
    assert response.status_code == 200, response.text
    return response.json()


# -- happy paths ----------------------------------------------------------------------------
def test_health_and_openapi(http: httpx.Client) -> None:
    assert http.get("/health").json() == {"ok": True}  # no token: up, and nothing more
    schema = http.get("/openapi.json").json()
    assert {"/index", "/query", "/documents", "/documents/{doc_id}", "/health", "/stats"} <= set(
        schema["paths"]
    )
    # Only JSON Schema keywords in bounds (pydantic leaves `ge`/`le` raw on some unions).
    text = json.dumps(schema)
    assert '"ge":' not in text and '"le":' not in text
    assert '"minimum": 1' in json.dumps(schema["components"]["schemas"]["QueryRequest"])


def test_openapi_declares_the_flat_error_envelope_and_400s(http: httpx.Client) -> None:
    schema = http.get("/openapi.json").json()
    models = schema["components"]["schemas"]
    error = models["ErrorResponse"]
    assert error["properties"]["error"]["type"] == "string"
    assert {"ok", "error", "code", "hint"} <= set(error["properties"])
    assert set(error["required"]) >= {"error", "code"}
    index_reply = models["IndexResponse"]["properties"]
    assert index_reply["unchanged"]["type"] == "boolean"
    assert index_reply["chunks"]["type"] == "integer"
    for path in ("/index", "/query"):
        responses = schema["paths"][path]["post"]["responses"]
        assert "400" in responses and "422" not in responses
        assert responses["400"]["content"]["application/json"]["schema"] == {
            "$ref": "#/components/schemas/ErrorResponse"
        }


def test_index_inline_documents_then_unchanged(http: httpx.Client) -> None:
    docs = [
        {
            "id": "inline-1",
            "text": "Quartz crystals resonate at a precise frequency.",
            "title": "Q",
        },
        {"id": "inline-2", "text": "Granite is an igneous rock.", "metadata": {"kind": "rock"}},
    ]
    first = _add(http, docs, "inline")
    assert first["ok"] is True
    assert (first["documents"], first["documents_unchanged"], first["unchanged"]) == (2, 0, False)
    assert first["chunks"] >= 2 and first["chunks_written"] == first["chunks"]
    assert first["file"] is None and first["collection"] == "inline"
    again = _add(http, docs, "inline")
    # Nothing written, but the answer still says how many chunks the documents hold.
    assert (again["documents"], again["documents_unchanged"], again["unchanged"]) == (0, 2, True)
    assert (again["chunks"], again["chunks_written"]) == (first["chunks"], 0)


def test_query_results_and_context(http: httpx.Client) -> None:
    _add(
        http,
        [
            {"id": f"q-{i}", "text": f"zebra number {i} grazes with zebra friends {'x' * i}"}
            for i in range(5)
        ],
        "zoo",
    )
    body = http.post("/query", json={"query": "zebra", "collection": "zoo"}).json()
    assert body["ok"] is True
    results = body["results"]
    assert len(results) == 5  # default top_k: the same on every interface (ragloom.contract)
    for rank, hit in enumerate(results, start=1):
        assert hit["rank"] == rank
        assert {
            "score",
            "text",
            "chunk",
            "source",
            "chunk_id",
            "document_id",
            "start",
            "end",
            "metadata",
        } <= set(hit)
        assert hit["collection"] == "zoo"
    assert body["context"] == "\n---\n".join(h["text"] for h in results)
    # `text` as in the library and --json; `chunk` repeats it for older HTTP clients
    assert all(h["chunk"] == h["text"] for h in results)
    five = http.post("/query", json={"query": "zebra", "top_k": 5, "collection": "zoo"}).json()
    assert len(five["results"]) == 5
    none = http.post("/query", json={"query": "unicorn", "collection": "zoo"}).json()
    assert (none["ok"], none["results"], none["context"]) == (True, [], "")


def test_index_path_folder_file_and_reindex(http: httpx.Client, tree: dict[str, Path]) -> None:
    notes = tree["root"] / "notes"
    report = http.post("/index", json={"path": str(notes), "collection": "lore"}).json()
    assert report["ok"] is True
    assert (report["files"], report["documents"], report["unchanged"]) == (2, 2, False)
    assert report["file"] == "notes"  # relative to its root
    again = http.post("/index", json={"path": str(notes), "collection": "lore"}).json()
    assert (again["documents"], again["documents_unchanged"], again["unchanged"]) == (0, 2, True)
    assert again["chunks"] == report["chunks"] > 0 and again["chunks_written"] == 0
    hits = http.post("/query", json={"query": "Aelwen", "collection": "lore"}).json()["results"]
    assert (hits[0]["document_id"], hits[0]["source"]) == ("notes/lore.md", "notes/lore.md")
    one = http.post("/index", json={"path": str(tree["root"] / "links" / "ok.txt")}).json()
    assert (one["files"], one["documents"]) == (1, 1)


def test_delete_document(http: httpx.Client) -> None:
    odd_id = "dir/sub doc?#%.md"
    _add(http, [{"id": odd_id, "text": "ephemeral walrus text"}], "trash")
    response = http.delete("/documents/dir/sub%20doc%3F%23%25.md", params={"collection": "trash"})
    assert response.status_code == 200, response.text
    assert response.json() == {"ok": True, "id": odd_id, "collection": "trash", "chunks": 1}
    assert (
        http.post("/query", json={"query": "walrus", "collection": "trash"}).json()["results"] == []
    )
    _error(http.delete("/documents/dir/sub%20doc%3F%23%25.md", params={"collection": "trash"}), 404)
    _error(http.delete("/documents/anything", params={"collection": "no-such"}), 404, "not_found")


def test_documents_paging(http: httpx.Client) -> None:
    _add(http, [{"id": f"p{i:02d}", "text": f"page item {i}"} for i in range(7)], "pages")
    first = http.get("/documents", params={"collection": "pages", "limit": 3}).json()
    assert first["ok"] is True and first["total"] == 7
    assert [d["id"] for d in first["documents"]] == ["p00", "p01", "p02"]
    rest = http.get("/documents", params={"collection": "pages", "offset": 3, "limit": 10}).json()
    assert [d["id"] for d in rest["documents"]] == [f"p{i:02d}" for i in range(3, 7)]
    doc = rest["documents"][0]
    assert {"collection", "source", "title", "metadata", "chunks", "indexed_at"} <= set(doc)
    everything = http.get("/documents").json()
    assert everything["total"] >= 7
    _error(http.get("/documents", params={"collection": "no-such"}), 404, "not_found")
    for bad in ({"limit": 0}, {"limit": 1001}, {"offset": -1}, {"limit": "many"}):
        _error(http.get("/documents", params=bad), 400, "bad_request")


def test_max_per_over_http_caps_only_hits_with_the_key(http: httpx.Client) -> None:
    docs = [
        {"id": f"c{n}", "text": f"grace note {n}", "metadata": {"scholar_id": "calvin"}}
        for n in range(3)
    ] + [{"id": f"f{n}", "text": f"grace question {n}", "metadata": {}} for n in range(3)]
    _add(http, docs, "capped")
    body = {"query": "grace", "top_k": 10, "collection": "capped"}
    kept = http.post("/query", json={**body, "diversity": {"max_per": {"scholar_id": 2}}})
    ids = [h["document_id"] for h in kept.json()["results"]]
    assert sorted(i[0] for i in ids) == ["c", "c", "f", "f", "f"]
    grouped = {"max_per": {"scholar_id": 2}, "missing": "group"}
    ids = [
        h["document_id"]
        for h in http.post("/query", json={**body, "diversity": grouped}).json()["results"]
    ]
    assert sorted(i[0] for i in ids) == ["c", "c", "f", "f"]


def test_stats(http: httpx.Client) -> None:
    _add(http, [{"id": "s1", "text": "statistics are fun"}], "statsy")
    stats = http.get("/stats").json()
    assert stats["ok"] is True
    assert stats["collections"]["statsy"]["documents"] == 1
    assert stats["documents"] == sum(c["documents"] for c in stats["collections"].values())


# -- paths outside the roots ---------------------------------------------------------------
def test_path_escapes_are_forbidden(http: httpx.Client, tree: dict[str, Path]) -> None:
    root = tree["root"]
    attempts = [
        str(tree["outside"] / "secret.txt"),  # plainly outside
        str(root / ".." / "outside" / "secret.txt"),  # `..` escape
        str(root / "filelink.txt"),  # symlinked file pointing outside
        str(root / "dirlink"),  # symlinked folder pointing outside
        str(root / "dirlink" / "secret.txt"),
        "/etc/passwd",
        str(tree["outside"] / "missing.txt"),  # missing AND outside: still 403, no existence leak
    ]
    for path in attempts:
        _error(http.post("/index", json={"path": path}), 403, "forbidden")
    # A folder holding a link that points outside: its other files are indexed, the link
    # is skipped without being read (and without naming its target).
    links = http.post("/index", json={"path": str(root / "links"), "collection": "links"})
    assert links.status_code == 200, links.text
    assert links.json()["skipped"] == [
        {"path": "links/leak.txt", "reason": "symbolic link to outside the allowed folders"}
    ]
    assert "outside/" not in links.text and str(tree["base"]) not in links.text
    for collection in ("default", "links"):
        body = {"query": "swordfish passphrase", "collection": collection}
        assert http.post("/query", json=body).json()["results"] == []


def test_missing_path_under_root_is_404(http: httpx.Client, tree: dict[str, Path]) -> None:
    _error(http.post("/index", json={"path": str(tree["root"] / "nope.md")}), 404, "not_found")


def test_invalid_utf8_is_400_unless_lenient(http: httpx.Client, tree: dict[str, Path]) -> None:
    file = str(tree["root"] / "bad" / "broken.txt")
    error = _error(http.post("/index", json={"path": file, "collection": "bad"}), 400)
    assert error["code"] == "invalid_utf8" and "bad/broken.txt" in error["error"]
    assert str(tree["root"]) not in error["error"]
    # The hint speaks the request's language, not the command line's.
    assert '"lenient": true' in error["hint"] and "--lenient" not in error["hint"]
    folder = http.post("/index", json={"path": str(tree["root"] / "bad"), "collection": "bad"})
    assert folder.status_code == 200  # a folder: every other file indexed, this one reported
    assert folder.json()["failed"] == [
        {
            "path": "bad/broken.txt",
            "code": "invalid_utf8",
            "reason": "bad/broken.txt: invalid UTF-8 at byte 11, line 1 (invalid start byte)",
            "hint": error["hint"],
            "offset": 11,
            "line": 1,
        }
    ]
    ok = http.post("/index", json={"path": file, "collection": "bad", "lenient": True}).json()
    assert ok["documents"] == 1


# -- request errors ----------------------------------------------------------------------------
def _post_raw(http: httpx.Client, path: str, raw: bytes, kind: str = "application/json"):
    return http.post(path, content=raw, headers={"Content-Type": kind})


def test_malformed_json_is_400(http: httpx.Client) -> None:
    _error(_post_raw(http, "/query", b'{"query": "x",'), 400, "bad_json")
    _error(_post_raw(http, "/index", b"not json at all"), 400, "bad_json")


def test_non_json_body_is_415(http: httpx.Client) -> None:
    raw = b'{"query": "x"}'
    _error(_post_raw(http, "/query", raw, "application/x-www-form-urlencoded"), 415)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"query": "x", "top_k": -1}, "field 'top_k' must be at least 1"),
        ({"query": "x", "top_k": 0}, "field 'top_k' must be at least 1"),
        ({"query": "x", "top_k": 101}, "field 'top_k' must be at most 100"),
        ({"query": "x", "top_k": "3"}, "field 'top_k' must be a whole number"),
        ({"query": "x", "top_k": True}, "field 'top_k' must be a whole number"),
        ({"query": "x", "top_k": 2.5}, "field 'top_k' must be a whole number"),
        ({"query": 42}, "field 'query' must be a string"),
        ({"top_k": 3}, "field 'query' is required"),
        ({"query": "x", "topk": 3}, "field 'topk' is not a field of this request (did you mean"),
        ({"query": "x", "collection": ""}, "field 'collection' must not be empty"),
        ({"query": "x", "collection": 7}, "field 'collection' must be a string"),
        ({"query": "x", "mode": "fast"}, "field 'mode' must be one of 'lexical', 'dense' or"),
        (
            {"query": "x", "collections": [{"collection": "a", "top_k": 0}]},
            "field 'collections[0].top_k' must be at least 1",
        ),
        (
            {"query": "x", "diversity": {"max_per": {"scholar_id": 0}}},
            "field \"diversity.max_per['scholar_id']\" must be at least 1",
        ),
        ([1, 2, 3], "the request body must be a JSON object"),
    ],
)
def test_query_schema_violations_are_400_in_plain_words(
    http: httpx.Client, body: object, message: str
) -> None:
    error = _error(http.post("/query", json=body), 400, "bad_request")
    assert error["error"].startswith(message), error["error"]
    assert error["details"] and error["hint"]


@pytest.mark.parametrize(
    "raw",
    [
        b"{}",  # neither path nor documents
        b'{"path": "/x", "documents": []}',  # both
        b'{"documents": [{"id": "", "text": "t"}]}',
        b'{"documents": [{"id": "   ", "text": "t"}]}',
        b'{"documents": [{"id": "\\u001c\\u00a0\\ufeff\\u2003", "text": "t"}]}',  # all blank
        b'{"documents": [{"id": "a"}]}',
        b'{"documents": [{"id": "a", "text": 5}]}',
        b'{"documents": [{"id": "a", "text": "t", "metadata": []}]}',
        b'{"documents": [{"id": "a", "text": "t", "metadata": {"n": NaN}}]}',
        b'{"documents": [{"id": "a", "text": "t", "metadata": {"n": Infinity}}]}',
        b'{"documents": [{"id": "a\\ud800", "text": "t"}]}',  # lone surrogate: unstorable
        b'{"documents": [{"id": "a", "text": "t"}], "collection": "\\udfff"}',
        b'{"documents": "nope"}',
        b'{"path": 12}',
    ],
)
def test_index_schema_violations_are_400(http: httpx.Client, raw: bytes) -> None:
    error = _error(_post_raw(http, "/index", raw), 400, "bad_request")
    assert error["details"]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({}, 'give exactly one of "path" or "documents"'),
        ({"path": 12}, "field 'path' must be a string"),
        ({"path": None}, "field 'path' may be left out, but not null"),
        ({"documents": [{"id": "a"}]}, "field 'documents[0].text' is required"),
        ({"documents": [{"id": "a", "text": 5}]}, "field 'documents[0].text' must be a string"),
        (
            {"documents": [{"id": "a", "text": "t", "metadata": []}]},
            "field 'documents[0].metadata' must be a JSON object",
        ),
    ],
)
def test_index_field_errors_name_the_field(http: httpx.Client, body: dict, message: str) -> None:
    # Used to be 422 with `body.path.function-after[_encodable(), constrained-str]` in it.
    error = _error(http.post("/index", json=body), 400, "bad_request")
    assert error["error"] == message


def test_unknown_collection_is_404_when_others_exist(http: httpx.Client) -> None:
    _add(http, [{"id": "c1", "text": "something"}], "exists")
    error = _error(
        http.post("/query", json={"query": "x", "collection": "does-not-exist"}), 404, "not_found"
    )
    assert "does-not-exist" in error["error"]


def test_body_over_limit_is_413_declared(http: httpx.Client) -> None:
    text = "a" * (MAX_BODY + 10)
    response = http.post("/index", json={"documents": [{"id": "huge", "text": text}]})
    _error(response, 413, "too_large")


def test_body_over_limit_is_413_streamed(server: ServerProcess) -> None:
    """A chunked body without Content-Length is counted as it arrives."""

    def chunks():
        for _ in range(40):
            yield b"x" * 50_000  # 2 MB in all

    with httpx.Client(base_url=server.url, timeout=30) as client:
        response = client.post(
            "/index", content=chunks(), headers={"Content-Type": "application/json"}
        )
    assert "content-length" not in response.request.headers
    _error(response, 413, "too_large")


def test_body_under_limit_streamed_is_accepted(http: httpx.Client) -> None:
    payload = json.dumps({"documents": [{"id": "streamed", "text": "streamed otter " * 100}]})

    def chunks():
        data = payload.encode()
        for i in range(0, len(data), 500):
            yield data[i : i + 500]

    response = http.post("/index", content=chunks(), headers={"Content-Type": "application/json"})
    assert response.status_code == 200, response.text
    assert response.json()["documents"] == 1


def test_unknown_route_and_method(http: httpx.Client) -> None:
    _error(http.get("/nowhere"), 404, "not_found")
    _error(http.get("/query"), 405, "method_not_allowed")
    # Allow names every method of the path, not only the first route's.
    wrong = http.request("OPTIONS", "/documents/some-id")
    _error(wrong, 405, "method_not_allowed")
    assert {"GET", "DELETE"} <= {m.strip() for m in wrong.headers["allow"].split(",")}
    assert "POST" not in wrong.headers["allow"]


# -- concurrency ---------------------------------------------------------------------------------
def test_queries_answered_while_large_index_runs(http: httpx.Client, tree: dict[str, Path]) -> None:
    _add(http, [{"id": "steady", "text": "lighthouse keeper log"}], "busy")
    result: dict = {}

    def big_job() -> None:
        with httpx.Client(base_url=str(http.base_url), timeout=120) as other:
            result["response"] = other.post(
                "/index", json={"path": str(tree["big"]), "collection": "busy"}
            )

    job = threading.Thread(target=big_job)
    job_start = time.perf_counter()
    job.start()
    time.sleep(0.2)  # let the job start
    latencies: list[float] = []
    while job.is_alive():
        start = time.perf_counter()
        response = http.post(
            "/query", json={"query": "lighthouse bigmarker5", "collection": "busy"}
        )
        latencies.append(time.perf_counter() - start)
        assert response.status_code == 200, response.text
    job.join()
    job_seconds = time.perf_counter() - job_start
    print(
        f"{len(latencies)} queries during the {job_seconds:.1f} s job, "
        f"max {max(latencies) * 1000:.0f} ms"
    )
    report = result["response"].json()
    assert report["documents"] == BIG_FILES, report
    assert len(latencies) >= 5, "queries did not get answered during the index job"
    assert max(latencies) < 2.0, f"a query waited {max(latencies):.2f}s for the writer"
    final = http.post(
        "/query", json={"query": f"bigmarker{BIG_FILES - 1}", "collection": "busy"}
    ).json()
    assert final["results"][0]["document_id"] == f"big/doc{BIG_FILES - 1:04d}.txt"


def test_concurrent_index_calls_do_not_corrupt(http: httpx.Client, server: ServerProcess) -> None:
    """Overlapping writers: the final state matches a fresh read of the file, no duplicates."""
    collection = "race"
    n_docs = 300
    failures: list[str] = []  # a failed assert inside a thread would not fail the test

    def writer(version: int) -> None:
        docs = [
            {"id": f"r{i:03d}", "text": f"race token{i} version{version} " + "filler " * 30}
            for i in range(n_docs)
        ]
        with httpx.Client(base_url=server.url, timeout=120) as other:
            for start in range(0, n_docs, 50):
                body = {"documents": docs[start : start + 50], "collection": collection}
                response = other.post("/index", json=body)
                if response.status_code != 200:
                    failures.append(response.text)

    threads = [threading.Thread(target=writer, args=(v,)) for v in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    page = http.get("/documents", params={"collection": collection, "limit": 1000}).json()
    assert page["total"] == n_docs
    assert sorted(d["id"] for d in page["documents"]) == [f"r{i:03d}" for i in range(n_docs)]
    assert all(d["chunks"] >= 1 for d in page["documents"])
    with ragloom.Index(server.index_path, create=False) as fresh:
        for i in (0, 17, 150, n_docs - 1):
            served = http.post(
                "/query", json={"query": f"token{i}", "top_k": 5, "collection": collection}
            ).json()["results"]
            direct = [h.to_dict() for h in fresh.search(f"token{i}", 5, collection)]
            assert [r["chunk_id"] for r in served] == [r["chunk_id"] for r in direct]
            assert [r["score"] for r in served] == pytest.approx([r["score"] for r in direct])
            assert served[0]["document_id"] == f"r{i:03d}"
    with sqlite3.connect(server.index_path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_a_querys_own_controls_apply_to_each_of_its_collections(http: httpx.Client):
    """With `collections`, the body's controls are shared by every collection that does not
    set them (as `Index.search_many` takes shared keywords); a collection's own win. A step
    the server has no service for is refused there as anywhere (not silently ignored)."""
    for name, book in (("shared-a", 1), ("shared-b", 2)):
        docs = [
            {"id": f"{name}-{n}", "text": "the amber lamp", "metadata": {"book": n}}
            for n in (book, book + 10)
        ]
        assert http.post("/index", json={"collection": name, "documents": docs}).status_code == 200
    body = {
        "query": "amber lamp",
        "filters": {"book": {"$lt": 10}},
        "collections": [{"collection": "shared-a"}, {"collection": "shared-b", "filters": {}}],
    }
    groups = http.post("/query", json=body).json()["groups"]
    assert [r["document_id"] for r in groups[0]["results"]] == ["shared-a-1"]
    assert {r["document_id"] for r in groups[1]["results"]} == {"shared-b-2", "shared-b-12"}
    refused = http.post("/query", json={**body, "hops": 2})
    _error(refused, 400, "bad_input")
    assert "needs an LLM" in refused.json()["error"]
