"""Property-based hostile input (hypothesis): query strings, filter documents, request bodies
and file contents, against the library and the running server. Only typed errors: never an
untyped exception, never a 5xx, never a traceback in an answer."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, example, find, given, settings
from hypothesis import strategies as st

from ragloom import Document, Index, RagloomError
from ragloom.filters import FIELD_OPS, LOGICAL_OPS
from ragloom.loading.decode import looks_binary
from tests.server_launch import ServerProcess

SETTINGS = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
FILE_SETTINGS = settings(SETTINGS, max_examples=60)  # each example writes an index file
DOCS = [
    Document(f"d{i}", f"text {i} about harbours and bells {w}", metadata=meta)
    for i, (w, meta) in enumerate(
        [
            ("alpha", {"chapter": 1, "tags": ["a", "b"], "v": "1.2"}),
            ("beta", {"chapter": 2.5, "tags": [], "deprecated": True}),
            ("gamma", {"scholar": "x", "v": "10.0.1"}),
            ("delta", {}),
        ]
    )
]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
)
keys = st.one_of(
    st.sampled_from(["chapter", "tags", "v", "scholar", "deprecated", "missing", ""]),
    st.sampled_from([*FIELD_OPS, *LOGICAL_OPS, "$bogus", "$"]),
    st.text(max_size=8),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=4)),
    max_leaves=12,
)
filters = st.dictionaries(keys, json_values, max_size=4)
queries = st.text(max_size=200)


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory):
    index = Index(tmp_path_factory.mktemp("props") / "i.db")
    index.add(DOCS)
    yield index
    index.close()


@SETTINGS
@given(query=queries, filter_doc=st.one_of(st.none(), filters), top_k=st.integers(-3, 120))
def test_library_search_raises_only_typed_errors(library: Index, query, filter_doc, top_k) -> None:
    try:
        hits = library.search(query, top_k=top_k, filters=filter_doc)
    except RagloomError:
        return
    assert len(hits) <= max(top_k, 0)


@FILE_SETTINGS
@given(content=st.binary(max_size=3000), suffix=st.sampled_from([".txt", ".md", ".jsonl", ".py"]))
def test_any_file_content_is_indexed_skipped_or_failed(tmp_path: Path, content, suffix) -> None:
    folder = tmp_path / "f"
    folder.mkdir(exist_ok=True)
    for old in folder.iterdir():
        old.unlink()
    (folder / f"x{suffix}").write_bytes(content)
    (folder / "good.txt").write_text("a good neighbour file")
    with Index(tmp_path / "i.db") as index, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = index.index_path(folder)
        assert report.files == 2
        outcome = len(report.skipped) + len(report.failed)
        assert outcome <= 1
        assert index.search("neighbour")[0].document_id == "good.txt"
        for failure in report.failed:
            assert failure.code and failure.reason and failure.path.endswith(suffix)


# -- the running server ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory):
    base = tmp_path_factory.mktemp("props-http")
    (base / "root").mkdir()
    env = {"RAGLOOM_EMBEDDER": "none"}
    with ServerProcess(base / "i.db", roots=[base / "root"], env=env) as srv:
        with httpx.Client(base_url=srv.url, timeout=30) as http:
            docs = [{"id": d.id, "text": d.text, "metadata": d.metadata} for d in DOCS]
            assert http.post("/index", json={"documents": docs}).status_code == 200
            yield http
        assert "Traceback" not in srv.output(), srv.output()[-3000:]


def _typed(response: httpx.Response) -> None:
    assert response.status_code < 500, response.text
    assert "Traceback" not in response.text
    body = response.json()
    if response.status_code >= 400:
        assert body["ok"] is False and body["code"], response.text


@SETTINGS
@given(query=queries, filter_doc=st.one_of(st.none(), filters), top_k=st.integers(-3, 120))
def test_server_query_answers_typed(live: httpx.Client, query, filter_doc, top_k) -> None:
    body: dict[str, Any] = {"query": query, "top_k": top_k}
    if filter_doc is not None:
        body["filters"] = filter_doc
    _typed(live.post("/query", json=body))


bodies = st.dictionaries(
    st.sampled_from(
        ["query", "top_k", "filters", "documents", "path", "collection", "boosts", "lenient", "x"]
    ),
    json_values,
    max_size=5,
)


@SETTINGS
@given(body=bodies, endpoint=st.sampled_from(["/query", "/index"]))
def test_server_any_body_answers_typed(live: httpx.Client, body, endpoint) -> None:
    _typed(live.post(endpoint, json=body))


@SETTINGS
@given(raw=st.binary(max_size=300))
def test_server_any_bytes_answer_typed(live: httpx.Client, raw) -> None:
    for endpoint in ("/query", "/index"):
        response = live.post(endpoint, content=raw, headers={"Content-Type": "application/json"})
        _typed(response)


@SETTINGS
@given(
    docs=st.lists(
        st.fixed_dictionaries(
            {"id": st.text(min_size=1, max_size=30), "text": st.text(max_size=300)},
            optional={"title": st.text(max_size=30), "metadata": filters},
        ),
        min_size=1,
        max_size=4,
    )
)
def test_server_any_inline_documents_answer_typed(live: httpx.Client, docs) -> None:
    response = live.post("/index", json={"documents": docs, "collection": "fuzzdocs"})
    _typed(response)
    if response.status_code == 200:
        query = " ".join(d["text"] for d in docs)[:500]
        _typed(live.post("/query", json={"query": query, "collection": "fuzzdocs"}))


def test_strategies_reach_the_filter_language() -> None:
    """The filter strategy produces nested operator documents, not only plain keys."""
    found = find(filters, lambda f: "$and" in json.dumps(f) and '"$gt"' in json.dumps(f))
    assert found


records = st.one_of(
    st.builds(
        lambda fields, text: json.dumps({**fields, "text": text}),
        st.dictionaries(keys, json_values, max_size=4),
        st.text(max_size=40),
    ),
    json_values.map(json.dumps),
    st.text(max_size=40),
    st.integers(1, 400).map(lambda depth: '{"text": "t", "m": ' + "[" * depth + "]" * depth + "}"),
)


@FILE_SETTINGS
@given(lines=st.lists(records, max_size=8))
@example(lines=["\x00"])  # binary content: named, lenient or not
def test_any_jsonl_lines_give_records_or_typed_failures(tmp_path: Path, lines) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogatepass")
    with Index(tmp_path / "i.db") as index, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        strict = index.index_path(path)
        lenient = index.index_path(path, lenient=True)
    if looks_binary(path.read_bytes()):  # a NUL early on: named as binary, lenient or not
        assert [f.code for f in strict.failed] == [f.code for f in lenient.failed]
        assert [f.code for f in strict.failed] == ["unsupported_format"]
    else:
        assert {f.code for f in strict.failed} <= {"bad_record", "invalid_utf8"}
        assert lenient.failed == []
