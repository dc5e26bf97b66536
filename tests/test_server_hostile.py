"""Hostile files and hostile callers against the real server over HTTP (issue 10, issue 11.1).

Host names (DNS rebinding), what leaks, FIFOs and stuck jobs, hard links, the swap race,
and the ids and sources of files, all through `ragloom serve` running as a subprocess.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from contextlib import suppress
from pathlib import Path

import httpx
import pytest

from tests.embed_server import EmbedServer
from tests.hostile import build
from tests.server_launch import ServerProcess

FLIPPER = Path(__file__).with_name("flipper.py")
ENV = {"RAGLOOM_EMBEDDER": "none"}


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("hostile")
    root, outside = base / "root", base / "outside"
    for folder, text in (
        ("bible", "The bible's world: floating isles of Vey."),
        ("other", "Another world: the salt flats of Orun."),
    ):
        (root / folder).mkdir(parents=True)
        (root / folder / "world.txt").write_text(text)
    (root / "bible" / "characters.txt").write_text("Mira the cartographer of Vey.")
    (root / "alias.txt").symlink_to(root / "bible" / "world.txt")
    build(root / "hostile", outside)  # writes outside/secret.txt too
    (root / "fifos").mkdir()
    for name in ("one.txt", "two.txt"):
        os.mkfifo(root / "fifos" / name)
    (root / "links").mkdir()
    os.link(outside / "secret.txt", root / "links" / "linked.txt")
    (root / "links" / "plain.txt").write_text("a plain file next to a hard link")
    (root / "race" / "d").mkdir(parents=True)
    (root / "race" / "d" / "flip.txt").write_text("inside words only\n")
    (outside / "flip.txt").write_text("outside swordfish secret\n")
    (root / "big").mkdir()
    for i in range(1200):
        (root / "big" / f"doc{i:04d}.txt").write_text(f"big folder file {i} about bigword{i}\n")
    (root / "huge.txt").write_text("h" * 100_000)
    return {"base": base, "root": root, "outside": outside}


@pytest.fixture(scope="module")
def server(tree: dict[str, Path]):
    with ServerProcess(tree["base"] / "a.db", roots=[tree["root"]], env=ENV) as srv:
        yield srv
        assert "Traceback" not in srv.output(), srv.output()[-3000:]


@pytest.fixture(scope="module")
def http(server: ServerProcess):
    with httpx.Client(base_url=server.url, timeout=60) as client:
        yield client


def _index(http: httpx.Client, path: Path, **body: object) -> httpx.Response:
    return http.post("/index", json={"path": str(path), **body})


# -- DNS rebinding: the Host check ---------------------------------------------------------------
def raw_request(port: int, head: bytes) -> tuple[int, bytes]:
    """Send a hand-written request (to control the Host headers exactly); status and body."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(head)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    status = int(data.split(b" ", 2)[1])
    return status, data.partition(b"\r\n\r\n")[2]


def test_only_loopback_host_names_are_answered(http: httpx.Client, server: ServerProcess) -> None:
    port = server.port
    for host in ("localhost", f"localhost:{port}", "127.0.0.1", f"[::1]:{port}", "LocalHost."):
        response = http.get("/health", headers={"Host": host})
        assert response.status_code == 200, (host, response.text)
    rebinding = ("evil.example", f"evil.example:{port}", "127.0.0.1.evil.example", "[::2]")
    for host in (*rebinding, "localhost:notaport", "local host"):
        for method, path, content in (
            ("GET", "/health", None),
            ("GET", "/documents", None),
            ("POST", "/query", b'{"query": "x"}'),
            ("POST", "/index", b"{not json"),  # 421, not 400: refused before any handler
        ):
            response = http.request(method, path, content=content, headers={"Host": host})
            assert response.status_code == 421, (host, path, response.text)
            assert response.json()["code"] == "bad_host"
    for head in (
        b"GET /health HTTP/1.1\r\nHost: localhost\r\nHost: evil.example\r\n\r\n",
        b"GET /health HTTP/1.0\r\n\r\n",  # no Host at all
    ):
        status, body = raw_request(port, head + b"")
        assert status == 421 and b"bad_host" in body


# -- nothing outside the contract leaks ---------------------------------------------------------
def test_sources_and_reports_are_relative_to_the_root(http: httpx.Client, tree) -> None:
    root = tree["root"]
    secrets = {str(tree["base"]), os.path.realpath(tree["base"])}
    answers = [
        _index(http, root / "bible", collection="leak"),
        _index(http, root / "other" / "world.txt", collection="leak"),
        _index(http, root / "hostile", collection="leak-h", include=["*"]),
        _index(http, root / "hostile" / "mixed_latin1.txt", collection="leak"),
        http.post("/query", json={"query": "world", "collection": "leak", "top_k": 5}),
        http.post("/query", json={"query": "world", "collection": "leak", "budget": 300}),
        http.post(
            "/query",
            json={"query": "world", "collections": [{"collection": "leak", "label": "L"}]},
        ),
        http.get("/documents", params={"collection": "leak"}),
        http.get("/health"),
    ]
    for response in answers:
        assert response.status_code in (200, 400), response.text
        for secret in secrets:
            assert secret not in response.text, response.text
        assert "Traceback" not in response.text
    hits = answers[4].json()["results"]
    assert {h["source"] for h in hits} == {"bible/world.txt", "other/world.txt"}
    assert "source: bible/world.txt" in answers[5].json()["context"]
    assert answers[0].json()["file"] == "bible"
    assert answers[1].json()["file"] == "other/world.txt"
    docs = answers[7].json()["documents"]
    assert {d["source"] for d in docs} == {
        "bible/world.txt",
        "bible/characters.txt",
        "other/world.txt",
    }
    assert answers[8].json() == {"ok": True}


# -- ids: one file, one document; no two files share an id --------------------------------------
def test_file_ids_over_http(http: httpx.Client, tree) -> None:
    root = tree["root"]
    assert _index(http, root / "bible" / "world.txt", collection="ids").status_code == 200
    assert _index(http, root / "other" / "world.txt", collection="ids").status_code == 200
    _index(http, root / "bible", collection="ids")
    _index(http, root / "alias.txt", collection="ids")  # a link to bible/world.txt
    docs = http.get("/documents", params={"collection": "ids"}).json()["documents"]
    assert sorted(d["id"] for d in docs) == [
        "bible/characters.txt",
        "bible/world.txt",
        "other/world.txt",
    ]
    hits = http.post("/query", json={"query": "world", "collection": "ids", "top_k": 5}).json()
    assert sorted(h["document_id"] for h in hits["results"]) == [
        "bible/world.txt",
        "other/world.txt",
    ]


# -- hostile files --------------------------------------------------------------------------------
def test_hostile_corpus_over_http(http: httpx.Client, tree) -> None:
    root = tree["root"]
    report = _index(http, root / "hostile", collection="hostile", include=["*"])
    assert report.status_code == 200, report.text
    body = report.json()
    failed = {f["path"]: f for f in body["failed"]}
    assert failed["hostile/mixed_latin1.txt"]["line"] == 2
    assert failed["hostile/records.jsonl"]["code"] == "bad_record"
    assert "hostile/bad_name_\\xff.txt" in failed
    skipped = dict((s["path"], s["reason"]) for s in body["skipped"])
    assert skipped["hostile/pipe.txt"] == "not a regular file (FIFO)"
    assert skipped["hostile/loop.txt"] == "symbolic link loop"
    lenient = _index(http, root / "hostile", collection="hostile", include=["*"], lenient=True)
    # lenient repairs text; binary content is not text, and stays named
    assert [f["path"] for f in lenient.json()["failed"]] == ["hostile/nul_early.txt"]
    deep = _index(http, root / "hostile" / "records.jsonl", collection="deep")
    assert deep.status_code == 400 and deep.json()["code"] == "bad_record"
    loop = _index(http, root / "hostile" / "loop.txt")
    assert loop.status_code == 404, loop.text
    search = http.post("/query", json={"query": "sixteenword", "collection": "hostile"}).json()
    assert search["results"][0]["document_id"] == "hostile/utf16.txt"


def test_fifos_neither_block_nor_exhaust_the_index_slots(http: httpx.Client, tree) -> None:
    fifos = tree["root"] / "fifos"
    answers: list[httpx.Response] = []

    def post(path: Path) -> None:
        with httpx.Client(base_url=str(http.base_url), timeout=30) as other:
            answers.append(_index(other, path))

    threads = [threading.Thread(target=post, args=(p,)) for p in (fifos / "one.txt", fifos)]
    start = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert time.monotonic() - start < 20 and len(answers) == 2
    for answer in answers:
        assert answer.status_code == 200 and answer.json()["documents"] == 0
        assert {s["reason"] for s in answer.json()["skipped"]} == {"not a regular file (FIFO)"}
    inline = http.post("/index", json={"documents": [{"id": "after", "text": "still works"}]})
    assert inline.status_code == 200


def test_hard_links_are_refused_by_default(http: httpx.Client, tree) -> None:
    links = tree["root"] / "links"
    single = _index(http, links / "linked.txt", collection="links")
    assert single.status_code == 403 and single.json()["code"] == "file_refused"
    assert "--allow-hardlinks" in single.json()["hint"]
    folder = _index(http, links, collection="links").json()
    assert [(f["path"], f["code"]) for f in folder["failed"]] == [
        ("links/linked.txt", "file_refused")
    ]
    assert folder["documents"] == 1
    hits = http.post("/query", json={"query": "swordfish", "collection": "links"}).json()
    assert hits["results"] == []


def test_swap_race_over_http_never_serves_outside_content(http: httpx.Client, tree) -> None:
    """1,000 rounds of /index while a file flips between inside content and a link to outside
    (and then its folder flips likewise): 0 rounds in which outside content is indexed."""
    root, outside = tree["root"], tree["outside"]
    rounds, leaks = 1000, 0
    for mode, first, second in (
        ("file", root / "race" / "d" / "flip.txt", outside / "secret.txt"),
        ("folder", root / "race" / "d", outside),
    ):
        flipper = subprocess.Popen([sys.executable, str(FLIPPER), mode, str(first), str(second)])
        try:
            for i in range(rounds // 2):
                path = root / "race" / "d" / ("flip.txt" if i % 2 else "")
                response = _index(http, path, collection="race")
                assert response.status_code in (200, 403, 404, 409), response.text
                hits = http.post("/query", json={"query": "swordfish", "collection": "race"})
                leaks += bool(hits.json()["results"]) or "swordfish" in response.text
        finally:
            flipper.kill()
            flipper.wait()
    print(f"swap race over HTTP: {rounds} rounds, {leaks} leaks")
    assert leaks == 0


# -- options: hard links allowed, other host names, a time limit, a size limit ------------------
@pytest.fixture(scope="module")
def lax(tree: dict[str, Path]):
    with EmbedServer() as embed:
        env = {"RAGLOOM_EMBEDDER": f"openai:slowish@{embed.url}"}
        options = [
            "--allow-hardlinks",
            "--allow-host",
            "ragloom.test",
            "--index-timeout",
            "1",
            "--max-file-size",
            "64K",
        ]
        with (
            ServerProcess(
                tree["base"] / "b.db", roots=[tree["root"]], env=env, extra_args=options
            ) as srv,
            httpx.Client(base_url=srv.url, timeout=60) as client,
        ):
            yield client, embed, srv


def test_options_allow_hard_links_and_named_hosts(lax, tree) -> None:
    http, _, srv = lax
    linked = _index(http, tree["root"] / "links" / "linked.txt")
    assert linked.status_code == 200 and linked.json()["documents"] == 1
    named = http.get("/health", headers={"Host": f"ragloom.test:{srv.port}"})
    assert named.status_code == 200
    assert http.get("/health", headers={"Host": "other.test"}).status_code == 421
    huge = _index(http, tree["root"] / "huge.txt")
    assert huge.status_code == 422 and huge.json()["code"] == "file_too_large"


def test_a_job_past_its_time_limit_is_stopped_and_reported(lax, tree) -> None:
    http, embed, _ = lax
    embed.mode = "slow"  # every embedding request takes 2 s: the job cannot finish in 1 s
    answers: list[httpx.Response] = []

    def post() -> None:
        with httpx.Client(base_url=str(http.base_url), timeout=60) as other:
            answers.append(_index(other, tree["root"] / "big", collection="slow"))

    try:
        threads = [threading.Thread(target=post) for _ in range(3)]  # more jobs than slots
        start = time.monotonic()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        elapsed = time.monotonic() - start
    finally:
        embed.mode = "ok"
    assert len(answers) == 3 and elapsed < 30
    for answer in answers:
        assert answer.status_code == 504, answer.text
        error = answer.json()
        assert error["code"] == "timeout" and "longer than 1 s" in error["error"]
    start = time.monotonic()
    inline = http.post("/index", json={"documents": [{"id": "x", "text": "slots are free"}]})
    assert inline.status_code == 200 and time.monotonic() - start < 5


# -- SIGTERM ---------------------------------------------------------------------------------------
def test_sigterm_stops_the_server_while_jobs_run(tree) -> None:
    with EmbedServer() as embed:
        embed.mode = "slow"
        env = {"RAGLOOM_EMBEDDER": f"openai:slow@{embed.url}"}
        srv = ServerProcess(tree["base"] / "c.db", roots=[tree["root"]], env=env)
        try:

            def post(path: Path) -> None:
                # The server going away mid-request is expected.
                with httpx.Client(base_url=srv.url, timeout=60) as other, suppress(httpx.HTTPError):
                    _index(other, path, collection="term")

            jobs = [
                threading.Thread(target=post, args=(p,), daemon=True)
                for p in (tree["root"] / "big", tree["root"] / "big", tree["root"] / "fifos")
            ]
            for job in jobs:
                job.start()
            time.sleep(1.0)
            start = time.monotonic()
            srv.process.send_signal(signal.SIGTERM)
            srv.process.wait(timeout=20)
            took = time.monotonic() - start
            print(f"SIGTERM with indexing jobs running: exited in {took:.1f} s")
            assert took < 8
        finally:
            srv.stop()


def test_health_payload_is_json_with_only_ok(http: httpx.Client) -> None:
    assert json.loads(http.get("/health").text) == {"ok": True}
