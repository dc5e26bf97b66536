"""The PostgreSQL store on a real server: filters equal the Python predicate, selective
filters stay exact with an HNSW index, migration both ways, schema versions, typed errors,
the CLI and server on a database URL."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import httpx
import numpy as np
import psycopg
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ragloom import Document, Index
from ragloom.errors import StoreError
from ragloom.filters import compile_filter, parse_filter
from ragloom.store.base import DenseQuery
from ragloom.store.migrate import migrate
from ragloom.store.open import open_store
from ragloom.store.postgres import where
from ragloom.store.records import NewChunk, NewDocument
from tests.server_launch import ServerProcess

from .conftest import drop_schema
from .test_columns import filters, metadata


@pytest.fixture(scope="module")
def scratch(pg_server):
    """A raw connection with a `chunks` table of its own (for the filter property)."""
    schema = f"f_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(pg_server, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
        conn.execute(f"SET search_path TO {schema}")
        conn.execute("CREATE TABLE chunks (id serial, collection_id int, metadata jsonb)")
        yield conn
    drop_schema(pg_server, schema)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(metadata, min_size=1, max_size=25), filters)
@example(rows=[{"x": -0.0}], spec={"x": {"$version_lt": "9"}})  # jsonb has no -0: it is 0
def test_filter_sql_matches_the_dict_predicate(scratch, rows, spec) -> None:
    scratch.execute("TRUNCATE chunks RESTART IDENTITY")
    with scratch.cursor() as cur:
        cur.executemany(
            "INSERT INTO chunks (collection_id, metadata) VALUES (1, %s)",
            [(json.dumps(m),) for m in rows],
        )
    node = parse_filter(spec)
    cache: dict = {}
    condition = where.compile_filter(
        node, lambda fields: where.distinct_values(scratch, 1, 0, fields, cache)
    )
    query = psycopg.sql.SQL("SELECT id FROM chunks WHERE collection_id = 1 AND {} ORDER BY id")
    got = [r[0] for r in scratch.execute(query.format(condition)).fetchall()]
    predicate = compile_filter(spec)
    assert got == [i + 1 for i, m in enumerate(rows) if predicate(m)]


def _vector_documents(
    n: int, dimension: int, seed: int = 0
) -> tuple[list[NewDocument], np.ndarray]:
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(20, dimension))
    vectors = centers[rng.integers(0, 20, n)] + 0.3 * rng.normal(size=(n, dimension))
    vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
    docs = []
    for i in range(n):
        text = f"item {i} bucket{i % 1000}"
        chunk = NewChunk(0, text, 0, len(text), {}, text.split(), vectors[i])
        meta = {"bucket": i % 1000}
        docs.append(NewDocument(Document(f"d{i}", text, metadata=meta), f"h{i}", [chunk]))
    return docs, vectors


def test_selective_filters_stay_exact_past_the_hnsw_threshold(pg_url) -> None:
    store = open_store(pg_url() + "&hnsw_threshold=1000")
    try:
        docs, vectors = _vector_documents(3000, 32)
        config = {"embedding": {"model": "test", "dimension": 32}}
        with store.write() as write:
            info = write.ensure_collection("v", config)
            rows = write.put(info, docs).rows
        store.maintain(wait=True)
        rng = np.random.default_rng(1)
        with store.snapshot() as snap:
            assert store.indexer.has_index(snap.conn, info.id, 32)
            reader = snap.collection("v")
            node = parse_filter({"bucket": 7})  # 3 of 3,000 chunks: 0.1%
            eligible = [i for i in range(3000) if i % 1000 == 7]
            for _ in range(20):
                query = vectors[rng.integers(3000)] + 0.1 * rng.normal(size=32).astype(np.float32)
                got, scores = reader.dense(DenseQuery(query, node), 3)
                want = sorted(eligible, key=lambda i: -float(vectors[i] @ query))
                assert got.tolist() == [rows[i] for i in want]
                assert np.allclose(scores, [vectors[i] @ query for i in want], atol=1e-5)
                # unfiltered through the index: recall against brute force
                got, _ = reader.dense(DenseQuery(query), 10)
                exact = np.argsort(-(vectors @ query))[:10]
                assert len(set(got.tolist()) & {rows[i] for i in exact}) >= 9
    finally:
        store.close()


def test_a_writer_has_its_hnsw_index_built_when_it_finishes(pg_url) -> None:
    """Before close, a process that wrote past the threshold waits for the index its writes
    made due (`Index.close` calls `finish`); one that only read has nothing to finish."""
    url = pg_url() + "&hnsw_threshold=1000"
    reader, store = open_store(url), open_store(url)
    try:
        docs, _ = _vector_documents(3000, 32)
        with store.write() as write:
            info = write.ensure_collection("v", {"embedding": {"model": "test", "dimension": 32}})
            write.put(info, docs)
        assert reader.finish() == 0 and not reader.wrote
        store.finish()
        with store.snapshot() as snap:
            assert store.indexer.has_index(snap.conn, info.id, 32)
    finally:
        reader.close()
        store.close()


def test_migrate_to_postgres_and_back_keeps_every_answer(tmp_path: Path, pg_url) -> None:
    from ragloom.embedding.http import OllamaEmbedder

    from .embed_server import EmbedServer
    from .test_dense import DOCS

    with EmbedServer() as server:
        embedder = OllamaEmbedder(server.url, "hashed-words", retry_delay=0.01)
        source = tmp_path / "source.db"
        with Index(source, embedder=embedder) as index:
            index.add(DOCS + [Document("meta", "tagged text", metadata={"tags": ["a", "b"]})])
            index.configure("other", chunking={"max_chars": 30, "overlap": 0})
            index.add([Document("long", "one two three four five six seven " * 5)], "other")
            before = {q: index.search(q, top_k=3) for q in ("cats sleep", "bread", "tagged")}
            texts = {d.id: index.document_text(d.id) for d in DOCS}
        url = pg_url()
        report = migrate(source, url)
        assert (report.documents, report.collections) == (len(DOCS) + 2, ["default", "other"])
        back = tmp_path / "back.db"
        migrate(url, back)
        for location in (url, back):
            # a server without the embedding service: the stored vectors answer dense search
            with Index(location, embedder=embedder) as index:
                assert index.check() == []
                for query, hits in before.items():
                    got = index.search(query, top_k=3)
                    assert [(h.chunk_id, round(h.score, 5), h.metadata) for h in got] == [
                        (h.chunk_id, round(h.score, 5), h.metadata) for h in hits
                    ]
                assert {d: index.document_text(d) for d in texts} == texts
                assert index.stats()["collections"]["other"]["chunks"] > 1
        with pytest.raises(Exception, match="already holds documents"):
            migrate(source, url)


def test_schema_versions_and_search_only_opens(pg_url, pg_server) -> None:
    url = pg_url()
    schema = url.rsplit("schema=", 1)[1]
    with pytest.raises(StoreError, match="holds no ragloom index"):
        Index(url, read_only=True)
    with Index(url) as index:
        index.add([Document("a", "alpha beta")])
    with Index(url, read_only=True) as reader:
        assert reader.search("alpha")[0].document_id == "a"
    with psycopg.connect(pg_server, autocommit=True) as conn:
        conn.execute(f"INSERT INTO {schema}.schema_version VALUES (99)")
    with pytest.raises(StoreError, match="newer ragloom schema"):
        Index(url)


def test_an_unreachable_server_is_a_typed_error_quickly() -> None:
    with pytest.raises(StoreError) as info:
        Index("postgresql://postgres@127.0.0.1:1/none?connect_timeout=2")
    assert info.value.code == "store_unavailable" and "127.0.0.1" in info.value.message


def test_cli_and_server_on_a_database_url(tmp_path: Path, pg_url) -> None:
    url = pg_url()
    notes = tmp_path / "notes.md"
    notes.write_text("The lighthouse keeper forged a silver key.\n")
    env = {**os.environ, "RAGLOOM_EMBEDDER": "none"}
    cli = [sys.executable, "-m", "ragloom.cli"]
    done = subprocess.run(
        [*cli, "index", str(notes), "--store", url], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    found = subprocess.run(
        [*cli, "search", "silver key", "--json"],
        env={**env, "RAGLOOM_STORE": url},
        capture_output=True,
        text=True,
    )
    assert found.returncode == 0, found.stderr
    assert "lighthouse" in found.stdout
    with ServerProcess(url, env={"RAGLOOM_EMBEDDER": "none"}) as server:
        answer = httpx.post(f"{server.url}/query", json={"query": "silver key"}).json()
        assert "lighthouse keeper" in json.dumps(answer), answer


def test_one_url_names_the_cluster_and_ragloom_options_are_taken_out() -> None:
    from ragloom.errors import InputError
    from ragloom.store.postgres.url import parse_location

    one = parse_location("postgresql://u:secret@db:5432/app?schema=notes&sslmode=disable")
    assert one.write == one.read == "postgresql://u:secret@db:5432/app?sslmode=disable"
    assert (one.schema, one.hosts) == ("notes", 1) and "secret" not in one.shown
    many = parse_location("postgresql://u@p,r1:5433,r2/app?hnsw_threshold=5&replica_wait=0.1")
    assert many.hosts == 3 and many.hnsw_threshold == 5 and many.replica_wait == 0.1
    assert many.write == "postgresql://u@p,r1:5433,r2/app?target_session_attrs=read-write"
    assert "target_session_attrs=prefer-standby" in many.read
    assert "load_balance_hosts=random" in many.read
    mine = parse_location("postgresql://u@p,r1/app?target_session_attrs=any")
    assert "target_session_attrs=any" in mine.read  # the URL's own choice wins
    assert mine.write.endswith("target_session_attrs=any")
    with pytest.raises(InputError, match="schema"):
        parse_location("postgresql://u@p/app?schema=Robert');DROP")


def test_status_pages_show_a_store_url_without_secrets() -> None:
    from ragloom.store.open import location_label

    shown = location_label("postgresql://u:secret@p:5432,r1:5433,r2/app?password=x&schema=s")
    assert shown == "postgresql://u@p:5432,r1:5433,r2/app"  # every host, no password
    assert location_label("postgresql://db/app") == "postgresql://db/app"
    assert location_label("/srv/notes/index.db") == "index.db"


def test_prf_expansion_on_postgres_equals_the_embedded_store(tmp_path: Path, pg_url) -> None:
    """RM3 feedback needs weighted BM25 and document frequencies from the store: PostgreSQL
    answers exactly as the embedded store does (filters too)."""
    from ragloom.expansion.rm3 import PRFParams

    from .test_steps import DOCS

    prf = PRFParams(fb_docs=2, fb_terms=5, max_df_ratio=0.5)  # a tiny corpus's terms qualify
    docs = [Document(id=i, text=t, title=i.title(), metadata=m) for i, t, m in DOCS]
    queries = ("silver key", "drowned city", "tower forge", "ship harbour")
    answers = []
    for location in (tmp_path / "prf.db", pg_url()):
        with Index(location, embedder=None) as index:
            index.add(docs)
            answers.append(
                {
                    (q, str(f)): [
                        (h.chunk_id, round(h.score, 6))
                        for h in index.search(q, top_k=6, expand="prf", prf=prf, filters=f)
                    ]
                    for q in queries
                    for f in (None, {"book": 1})
                }
            )
            plain = {q: [h.chunk_id for h in index.search(q, top_k=6)] for q in queries}
    assert answers[0] == answers[1]
    assert any(plain[q] != [c for c, _ in answers[1][(q, "None")]] for q in queries)
