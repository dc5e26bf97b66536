"""`ragloom.Client` against a real `ragloom serve` subprocess (token and a root configured)."""

from __future__ import annotations

from pathlib import Path

import pytest

import ragloom
from ragloom import Client, Document, Hit, IndexReport
from ragloom.client import ConnectionFailed
from ragloom.server.errors import Forbidden, InvalidRequest, PayloadTooLarge, Unauthorized
from tests.server_launch import ServerProcess, free_port

TOKEN = "client-token"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("root")
    (root / "bible").mkdir()
    (root / "bible" / "characters.md").write_text(
        "# Characters\n\nMirela is a cartographer who maps the drowned coast.\n"
    )
    (root / "bible" / "places.md").write_text("# Places\n\nThe drowned coast floods each spring.\n")
    return root


@pytest.fixture(scope="module")
def server(root: Path, tmp_path_factory: pytest.TempPathFactory):
    index = tmp_path_factory.mktemp("client") / "index.db"
    env = {"RAGLOOM_EMBEDDER": "none"}
    with ServerProcess(index, roots=[root], token=TOKEN, max_body=200_000, env=env) as srv:
        yield srv


@pytest.fixture(scope="module")
def client(server: ServerProcess):
    with Client(server.url, token=TOKEN, timeout=30) as c:
        yield c


def test_client_is_exported() -> None:
    assert ragloom.Client is Client
    assert "Client" in ragloom.__all__


def test_every_typed_error_is_importable_from_ragloom() -> None:
    import ragloom.errors
    import ragloom.server.errors

    classes = {
        name: value
        for module in (ragloom.errors, ragloom.server.errors, ragloom.client)
        for name, value in vars(module).items()
        if isinstance(value, type) and issubclass(value, ragloom.RagloomError)
    }
    assert {"EmbedFailed", "EmbeddingOffline", "StorageFull", "Forbidden"} <= set(classes)
    for name, cls in classes.items():
        assert getattr(ragloom, name) is cls, name
        assert name in ragloom.__all__, name
    from ragloom import EmbedFailed  # the import the issue asked for

    assert EmbedFailed.code == "embed_failed"


def test_health_needs_no_token(server: ServerProcess) -> None:
    with Client(server.url) as anonymous:
        health = anonymous.health()
    assert health == {"ok": True}


def test_add_search_context_delete(client: Client) -> None:
    docs = [
        Document("harbor", "The harbor master logs every ship.", title="Harbor"),
        {"id": "tower", "text": "The tower watches the harbor at night.", "metadata": {"n": 1}},
    ]
    report = client.add(docs, collection="town")
    assert isinstance(report, IndexReport)
    assert (report.documents, report.unchanged) == (2, 0) and report.chunks >= 2
    assert client.add(docs, collection="town").unchanged == 2
    hits = client.search("harbor", top_k=2, collection="town")
    assert all(isinstance(h, Hit) for h in hits)
    assert [h.rank for h in hits] == [1, 2]
    assert {h.document_id for h in hits} == {"harbor", "tower"}
    assert hits[0].collection == "town" and hits[0].text
    assert (hits.mode, hits.degraded) == ("lexical", False)
    context = client.context("harbor", top_k=2, collection="town")
    assert context == "\n---\n".join(h.text for h in hits)
    raw = client.query("harbor", collection="town")
    assert raw["ok"] is True and raw["context"]
    assert client.delete("tower", collection="town") >= 1
    assert [h.document_id for h in client.search("tower", collection="town")] == []
    with pytest.raises(ragloom.NotFound):
        client.delete("tower", collection="town")


def test_awkward_document_ids_round_trip(client: Client) -> None:
    ids = ["a/b/c.md", "q?x=1#frag", "100% sure", "..", "./dot", "/leading", "ünï cödé"]
    client.add([{"id": i, "text": f"awkward id number {n}"} for n, i in enumerate(ids)], "odd")
    listed = {d["id"] for d in client.documents(collection="odd")}
    assert listed == set(ids)
    for doc_id in ids:
        assert client.delete(doc_id, collection="odd") == 1
    assert client.documents(collection="odd") == []


def test_index_path_and_documents_and_stats(client: Client, root: Path) -> None:
    report = client.index_path(root / "bible", collection="bible")
    assert (report.files, report.documents) == (2, 2)
    assert client.index_path(root / "bible", collection="bible").unchanged == 2
    hits = client.search("cartographer", collection="bible")
    assert (hits[0].document_id, hits[0].source) == ("bible/characters.md", "bible/characters.md")
    docs = client.documents(collection="bible")
    assert [d["id"] for d in docs] == ["bible/characters.md", "bible/places.md"]
    stats = client.stats()
    assert stats["collections"]["bible"]["documents"] == 2


def test_unchanged_reindex_reports_the_chunks_held(client: Client, root: Path) -> None:
    first = client.index_path(root / "bible", collection="held")
    again = client.index_path(root / "bible", collection="held")
    assert (again.chunks, again.unchanged_chunks) == (0, first.chunks)
    assert again.total_chunks == first.total_chunks > 0


def test_lenient_over_the_client(client: Client, root: Path) -> None:
    (root / "bible" / "broken.txt").write_bytes(b"The bell \xff rang.")
    try:
        with pytest.raises(ragloom.InputError) as bad:
            client.index_path(root / "bible" / "broken.txt", collection="lenient")
        assert bad.value.code == "invalid_utf8" and '"lenient": true' in bad.value.hint
        report = client.index_path(root / "bible" / "broken.txt", "lenient", lenient=True)
        assert report.documents == 1
    finally:
        (root / "bible" / "broken.txt").unlink()


def test_typed_errors(client: Client, root: Path, server: ServerProcess) -> None:
    with pytest.raises(InvalidRequest) as bad_k:
        client.search("x", top_k=0)
    assert isinstance(bad_k.value, ragloom.InputError) and bad_k.value.status == 400
    assert bad_k.value.code == "bad_request" and "'top_k' must be at least 1" in bad_k.value.message
    with pytest.raises(Forbidden):
        client.index_path(root.parent)
    with pytest.raises(Forbidden):
        client.index_path("/etc/hostname")
    with pytest.raises(ragloom.NotFound) as missing:
        client.index_path(root / "missing.md")
    assert missing.value.code == "not_found"
    client.add([{"id": "x", "text": "y"}], collection="present")
    with pytest.raises(ragloom.NotFound):
        client.search("x", collection="absent")
    with pytest.raises(PayloadTooLarge):
        client.add([{"id": "big", "text": "z" * 300_000}])
    with Client(server.url, token="wrong") as intruder, pytest.raises(Unauthorized):
        intruder.stats()
    with Client(server.url) as anonymous, pytest.raises(Unauthorized):
        anonymous.search("x")


def test_unreachable_server_is_connection_failed() -> None:
    nowhere = Client(f"http://127.0.0.1:{free_port()}", timeout=2)
    with nowhere, pytest.raises(ConnectionFailed) as failure:
        nowhere.health()
    assert failure.value.code == "unreachable"
    assert isinstance(failure.value, ragloom.RagloomError)
