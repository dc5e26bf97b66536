"""The command line, run as a real subprocess against a real index file."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.server_launch import free_port

DOCS = Path(__file__).resolve().parents[1] / "docs"


def ragloom(*args: str, index: Path | None = None, env: dict | None = None, cwd=None):
    full_env = {**os.environ, **(env or {})}
    prefix = ["--index", str(index)] if index else []
    return subprocess.run(
        [sys.executable, "-m", "ragloom", *prefix, *args],
        capture_output=True,
        text=True,
        env=full_env,
        cwd=cwd,
        timeout=120,
    )


def test_index_search_stats_delete_roundtrip(tmp_path: Path):
    db = tmp_path / "cli.db"
    done = ragloom("index", str(DOCS), index=db)
    assert done.returncode == 0, done.stderr
    assert "0 unchanged" in done.stdout

    again = ragloom("index", str(DOCS), "--json", index=db)
    report = json.loads(again.stdout)
    assert report["ok"] and report["documents"] == 0 and report["unchanged"] is True
    assert report["documents_unchanged"] == report["files"] and report["chunks"] > 0

    found = ragloom("search", "how are chunk ids numbered?", "--top-k", "2", "--json", index=db)
    hits = json.loads(found.stdout)["results"]
    assert len(hits) == 2 and hits[0]["document_id"] == "chunking.md"
    assert "{document_id}-{n}" in hits[0]["text"]

    text = ragloom("search", "stemming stop words", index=db)
    assert text.returncode == 0 and "search.md" in text.stdout

    stats = json.loads(ragloom("stats", "--json", index=db).stdout)
    assert stats["documents"] == len(list(DOCS.glob("*.md")))

    deleted = ragloom("delete", "chunking.md", index=db)
    assert deleted.returncode == 0 and "deleted chunking.md" in deleted.stdout
    after = json.loads(ragloom("search", "chunk ids", "--json", index=db).stdout)["results"]
    assert all(h["document_id"] != "chunking.md" for h in after)


def test_index_location_from_env_and_default(tmp_path: Path):
    env_db = tmp_path / "env.db"
    assert ragloom("index", str(DOCS), env={"RAGLOOM_INDEX": str(env_db)}).returncode == 0
    assert env_db.exists()
    workdir = tmp_path / "work"
    workdir.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "RAGLOOM_INDEX"}
    proc = subprocess.run(
        [sys.executable, "-m", "ragloom", "index", str(DOCS)],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0 and (workdir / "ragloom.db").exists()


def test_empty_query_prints_no_results(tmp_path: Path):
    db = tmp_path / "q.db"
    ragloom("index", str(DOCS), index=db)
    proc = ragloom("search", "?!", index=db)
    assert proc.returncode == 0 and "no results" in proc.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("index", "/no/such/path"), "no such file or folder"),
        (("search", "anything"), "no index at"),
        (("stats",), "no index at"),
    ],
)
def test_errors_are_clear_and_non_zero(tmp_path: Path, args, message):
    proc = ragloom(*args, index=tmp_path / "absent.db")
    assert proc.returncode != 0
    assert message in proc.stderr and "Traceback" not in proc.stderr


def test_delete_unknown_document(tmp_path: Path):
    db = tmp_path / "d.db"
    ragloom("index", str(DOCS), index=db)
    proc = ragloom("delete", "nope.md", index=db)
    assert proc.returncode == 1 and "no document 'nope.md'" in proc.stderr


def test_invalid_utf8_and_malformed_jsonl_errors(tmp_path: Path):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"ok text then \xff")
    proc = ragloom("index", str(bad), index=tmp_path / "u.db")
    assert proc.returncode == 1 and "invalid UTF-8 at byte 13" in proc.stderr
    assert "--lenient" in proc.stderr
    assert ragloom("index", str(bad), "--lenient", index=tmp_path / "u.db").returncode == 0

    records = tmp_path / "r.jsonl"
    records.write_text('{"id": "a", "text": "fine"}\n{broken\n')
    proc = ragloom("index", str(records), index=tmp_path / "j.db")
    assert proc.returncode == 1 and "line 2" in proc.stderr


def test_foreign_and_corrupt_files_are_refused(tmp_path: Path):
    foreign = tmp_path / "foreign.db"
    with sqlite3.connect(foreign) as conn:
        conn.execute("CREATE TABLE t (x)")
    proc = ragloom("stats", index=foreign)
    assert proc.returncode == 1 and "did not create" in proc.stderr
    corrupt = tmp_path / "corrupt.db"
    corrupt.write_bytes(b"\x00garbage" * 512)
    proc = ragloom("index", str(DOCS), index=corrupt)
    assert proc.returncode == 1 and "not a ragloom index" in proc.stderr


def test_binary_content_is_named_and_exits_1(tmp_path: Path):
    blob = tmp_path / "blob.txt"
    blob.write_bytes(b"\x00\x01\x02binary")
    proc = ragloom("index", str(blob), index=tmp_path / "b.db")
    assert proc.returncode == 1 and "failed" in proc.stderr
    assert "blob.txt: not a supported format" in proc.stderr


def test_chunk_options_change_chunking(tmp_path: Path):
    db = tmp_path / "c.db"
    ragloom("index", str(DOCS), "--chunk-size", "0", index=db)
    whole = json.loads(ragloom("stats", "--json", index=db).stdout)
    assert whole["chunks"] == whole["documents"]
    ragloom("index", str(DOCS), "--chunk-size", "200", "--overlap", "40", index=db)
    small = json.loads(ragloom("stats", "--json", index=db).stdout)
    assert small["chunks"] > 3 * small["documents"]


def test_eval_on_a_small_beir_folder(tmp_path: Path):
    folder = tmp_path / "mini"
    (folder / "qrels").mkdir(parents=True)
    corpus = [
        {"_id": "d1", "title": "Copper", "text": "Copper conducts electricity well."},
        {"_id": "d2", "title": "Tin", "text": "Tin is soft and used in solder."},
        {"_id": "d3", "title": "Lead", "text": "Lead is heavy and toxic."},
    ]
    (folder / "corpus.jsonl").write_text("\n".join(json.dumps(d) for d in corpus))
    queries = [
        {"_id": "q1", "text": "which metal conducts electricity"},
        {"_id": "q2", "text": "solder"},
    ]
    (folder / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in queries))
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\n")
    proc = ragloom("eval", str(folder), "--json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["queries"] == 2 and len(result["results"]) == 1
    lexical = result["results"][0]
    assert lexical["setting"] == "lexical"
    assert lexical["ndcg@10"] == 1.0 and lexical["mrr@10"] == 1.0 and lexical["recall@100"] == 1.0
    table = ragloom("eval", str(folder))
    assert "nDCG@10" in table.stdout
    expanded = ragloom("eval", str(folder), "--expand", "prf", "--json")
    assert expanded.returncode == 0, expanded.stderr
    assert json.loads(expanded.stdout)["expand"] == "prf"


def test_jsonl_fields_renamed_and_code_records_from_the_command_line(tmp_path: Path):
    records = tmp_path / "kb.jsonl"
    records.write_text(
        json.dumps(
            {
                "id": "t",
                "text": "func throttle(n: Int) -> Bool {\n    return n > 10\n}\n",
                "lang": "swift",
                "ios_version": "17.0",
            }
        )
        + "\n"
    )
    db = tmp_path / "kb.db"
    done = ragloom(
        "index", str(records), "--field", "ios_version=ios_version_min",
        "--language-field", "lang", index=db,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    found = json.loads(ragloom("search", "throttle", "--json", index=db).stdout)["results"]
    assert found[0]["metadata"]["ios_version_min"] == "17.0"
    assert (found[0]["metadata"]["kind"], found[0]["metadata"]["symbol"]) == (
        "function",
        "throttle",
    )


def test_index_embedder_and_collection_options_go_before_or_after_the_command(tmp_path: Path):
    db = tmp_path / "where.db"
    after = [sys.executable, "-m", "ragloom", "index", str(DOCS), "--index", str(db)]
    done = subprocess.run(
        [*after, "--embedder", "none", "--collection", "notes"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert db.exists()
    query = ("search", "how are chunk ids numbered?", "--json")
    before = ragloom("--collection", "notes", *query, index=db)  # --index before the command
    assert before.returncode == 0, before.stderr
    late = ragloom(*query, "--index", str(db), "-c", "notes")
    assert late.returncode == 0, late.stderr
    assert json.loads(before.stdout)["results"] == json.loads(late.stdout)["results"] != []
    bad = ragloom("stats", "--embedder", "nonsense", "--index", str(db))
    assert bad.returncode != 0 and "unknown service spec" in bad.stderr


def test_serve_accepts_the_index_option_after_the_command(tmp_path: Path):
    port = free_port()
    db = tmp_path / "served.db"
    command = ["serve", "--index", str(db), "--port", str(port), "--embedder", "none"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "ragloom", *command], stdout=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                assert httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).json()["ok"]
                break
            except httpx.TransportError:
                time.sleep(0.05)
        assert proc.poll() is None, "serve --index after the command exited"
        assert db.exists()  # it opened the index named after the command
    finally:
        proc.terminate()
        proc.wait(timeout=15)
