"""The Index on a real SQLite file: add, re-index, replace, delete, search, reopen."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import ragloom
from ragloom import Document, Index, InputError, NotFound, StoreError

STORY = {
    "mira": "Mira Vale is the lighthouse keeper of Greyhaven. She forged the silver key "
    "from her grandmother's ring and never speaks of the drowned bell.",
    "oren": "Oren Tash is a smuggler who trades salt and secrets along the northern coast. "
    "He owes Mira a debt from the winter of the long storm.",
    "city": "Greyhaven is a harbour city built on black basalt cliffs. Its bells ring at "
    "every tide, except the drowned bell, which rings only for the dead.",
}


def docs(**overrides: str) -> list[Document]:
    texts = {**STORY, **overrides}
    return [Document(id=k, text=v, title=None) for k, v in texts.items()]


def test_search_returns_hits_with_provenance(index: Index):
    report = index.add(docs())
    assert (report.documents, report.unchanged) == (3, 0)
    hits = index.search("who forged the silver key?", top_k=2)
    assert hits[0].document_id == "mira"
    top = hits[0]
    assert top.rank == 1 and top.score > 0 and top.match == "lexical"
    assert top.chunk_id == "mira-0" and top.lexical_rank == 1
    assert index.document_text("mira")[top.start : top.end] == top.text
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
    assert all(a.score >= b.score for a, b in zip(hits, hits[1:]))


def test_reindexing_unchanged_documents_does_nothing(index: Index):
    index.add(docs())
    before = index.chunk_documents()
    report = index.add(docs())
    assert (report.documents, report.unchanged, report.chunks) == (0, 3, 0)
    assert index.chunk_documents() == before  # the same chunk rows: nothing rewritten


def test_a_changed_document_replaces_all_of_its_chunks(index: Index):
    index.add(docs())
    report = index.add(docs(mira="Mira Vale now keeps bees on the moor and sells honey."))
    assert (report.documents, report.unchanged) == (1, 2)
    assert index.search("silver key lighthouse", top_k=5) == []
    assert index.search("honey bees", top_k=1)[0].document_id == "mira"
    assert index.stats()["chunks"] == 3


def test_delete_removes_every_trace(index: Index):
    index.add(docs())
    assert index.delete("oren") == 1
    assert all(h.document_id != "oren" for h in index.search("smuggler salt secrets", top_k=5))
    assert [d.doc_id for d in index.documents()] == ["city", "mira"]
    assert sorted(index.chunk_documents().values()) == ["city", "mira"]
    assert index.check() == []
    with pytest.raises(NotFound, match="no document 'oren'"):
        index.delete("oren")


def test_scores_after_adds_and_deletes_equal_a_fresh_build(locate):
    """Through the whole stack (SQLite postings, vocabulary, in-memory segments)."""
    queries = ["silver key", "drowned bell rings", "smuggler coast debt", "Greyhaven harbour"]
    extra = {
        f"note{i}": f"Note {i}: the tide bell and the silver coast, day {i}." for i in range(30)
    }
    with Index(locate("incremental")) as inc:
        inc.add(docs())
        for i, (k, v) in enumerate(extra.items()):
            inc.add([Document(k, v)])
            if i % 3 == 0:
                inc.delete(k)
        inc.add(docs(city="Greyhaven's harbour freezes in winter; the drowned bell is silent."))
        inc.delete("oren")
        # the fusion profile is taken when a collection's size has moved by a fifth: profile
        # both builds of the same content now, so that their fusion weighs the legs alike
        inc.calibrate(force=True)
        got = {q: {h.chunk_id: h.score for h in inc.search(q, top_k=100)} for q in queries}
    final = docs(city="Greyhaven's harbour freezes in winter; the drowned bell is silent.")
    final = [d for d in final if d.id != "oren"]
    final += [Document(k, v) for i, (k, v) in enumerate(extra.items()) if i % 3 != 0]
    with Index(locate("fresh")) as fresh:
        fresh.add(final)
        fresh.calibrate(force=True)
        want = {q: {h.chunk_id: h.score for h in fresh.search(q, top_k=100)} for q in queries}
    assert got == want


def test_index_survives_reopen(locate):
    index_path = locate()
    with Index(index_path) as index:
        index.add(docs())
        expected = [(h.chunk_id, h.score) for h in index.search("drowned bell", top_k=3)]
    with Index(index_path, create=False) as index:
        assert [(h.chunk_id, h.score) for h in index.search("drowned bell", top_k=3)] == expected


def test_another_process_sees_committed_data(locate):
    index_path = locate()
    with Index(index_path) as index:
        index.add(docs())
        code = (
            "import ragloom, sys\n"
            f"i = ragloom.Index({str(index_path)!r}, create=False)\n"
            "print(i.search('smuggler', top_k=1)[0].document_id)\n"
            "i.add([ragloom.Document('late', 'A late arrival: the cartographer Ilse Brand.')])\n"
        )
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == "oren"
        # the long-lived index notices the other process's commit
        assert index.search("cartographer", top_k=1)[0].document_id == "late"


def test_empty_and_punctuation_queries_return_no_hits(index: Index):
    index.add(docs())
    for query in ["", "   ", "?!...", "AND OR NOT", '"" * - +', "the of and"]:
        assert index.search(query) == []


def test_empty_index_returns_no_hits(index: Index):
    index.add([])
    assert index.search("anything") == []


def test_bad_arguments_are_clear_errors(index: Index):
    index.add(docs())
    with pytest.raises(InputError, match="top_k"):
        index.search("key", top_k=0)
    with pytest.raises(InputError, match="top_k"):
        index.search("key", top_k="3")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="query must be a string"):
        index.search(None)  # type: ignore[arg-type]
    with pytest.raises(NotFound, match="no collection 'nope'"):
        index.search("key", collection="nope")
    with pytest.raises(InputError, match="non-empty string"):
        index.add([Document(id="", text="x")])
    with pytest.raises(InputError, match="JSON"):
        index.add([Document(id="x", text="x", metadata={"when": object()})])


def test_a_failed_batch_leaves_committed_data_intact(index: Index):
    index.add(docs())
    with pytest.raises(InputError):
        index.add([Document("fine", "a perfectly fine document about lanterns"), "not a doc"])  # type: ignore[list-item]
    assert index.stats()["documents"] == 3
    assert index.search("lanterns") == []
    assert index.search("silver key", top_k=1)[0].document_id == "mira"


def test_collections_are_separate_corpora(index: Index):
    index.add(docs(), collection="story")
    index.add([Document("w1", "The silver key opens the archive of winds.")], collection="world")
    assert {h.document_id for h in index.search("silver key", collection="world")} == {"w1"}
    assert index.collections() == ["story", "world"]


def test_chunk_metadata_merges_document_metadata(index: Index):
    index.configure(chunking={"max_chars": 60, "overlap": 10, "min_chars": 5})
    text = "\n\n".join(
        f"Paragraph {i} speaks of the amber lantern and nothing else." for i in range(5)
    )
    index.add([Document("lamp", text, title="Lanterns", metadata={"book": "one"})])
    hits = index.search("amber lantern", top_k=10)
    assert len(hits) == 5
    assert {h.chunk_id for h in hits} == {f"lamp-{n}" for n in range(5)}
    assert all(h.metadata["book"] == "one" and h.title == "Lanterns" for h in hits)
    full = index.document_text("lamp")
    assert all(full[h.start : h.end] == h.text for h in hits)


def test_changing_chunk_settings_rechunks_on_reindex(index: Index):
    index.add(docs())
    index.configure(chunking={"max_chars": 50, "overlap": 0, "min_chars": 1})
    report = index.add(docs())
    assert report.documents == 3 and report.chunks > 3


def test_tokenizer_cannot_change_under_existing_documents(index: Index):
    index.add(docs())
    with pytest.raises(InputError, match="tokenizer cannot change"):
        index.configure(tokenizer={"stemmer": "none"})


def test_foreign_sqlite_file_is_refused(tmp_path: Path):
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE invoices (id INTEGER)")
    with pytest.raises(StoreError, match="did not create"):
        Index(path)
    with sqlite3.connect(path) as conn:  # untouched
        assert conn.execute("SELECT name FROM sqlite_master").fetchall() == [("invoices",)]


def test_corrupt_file_is_refused(tmp_path: Path):
    path = tmp_path / "junk.db"
    path.write_bytes(b"this is not a database at all" * 100)
    with pytest.raises(StoreError, match="not a ragloom index"):
        Index(path)
    assert path.read_bytes().startswith(b"this is not a database")


def test_missing_index_is_an_error_when_not_creating(tmp_path: Path):
    with pytest.raises(StoreError, match="no index at"):
        Index(tmp_path / "absent.db", create=False)
    with pytest.raises(StoreError, match="does not exist"):
        Index(tmp_path / "no" / "such" / "dir.db")


def test_open_index_helper(index_path: Path):
    with ragloom.open_index(str(index_path)) as index:
        assert index.stats()["documents"] == 0


def test_a_fresh_index_answers_with_no_hits_and_unknown_collections_are_errors(index: Index):
    assert index.search("anything") == []
    with pytest.raises(NotFound):
        index.search("anything", collection="elsewhere")


def test_documents_can_name_their_own_collection(index: Index):
    index.add(
        [Document("a", "alpha lantern text"), Document("b", "beta lantern text", collection="x")]
    )
    assert [h.document_id for h in index.search("lantern")] == ["a"]
    assert [h.document_id for h in index.search("lantern", collection="x")] == ["b"]


def test_enrichers_add_chunk_metadata_and_change_the_hash(index: Index):
    def shouty(doc: Document, span) -> dict:
        return {"loud": span.text.isupper()}

    index.add(
        [Document("a", "QUIET NO MORE"), Document("b", "calm words here")], enrichers=[shouty]
    )
    assert index.search("quiet")[0].metadata["loud"] is True
    assert index.search("calm")[0].metadata["loud"] is False
    assert index.add([Document("a", "QUIET NO MORE")], enrichers=[shouty]).unchanged == 1
    assert index.add([Document("a", "QUIET NO MORE")]).documents == 1  # enrichers changed


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (Document("bad\ud800id", "text"), "lone surrogate"),
        (Document("x", "text \udfff"), "lone surrogate"),
        (Document("x", "t", metadata={"score": float("nan")}), "plain JSON"),
        (Document("x", "t", metadata={"score": float("inf")}), "plain JSON"),
        (Document("x", "t", collection=" "), "blank"),
    ],
)
def test_unstorable_documents_are_input_errors(index: Index, doc: Document, message: str):
    index.add(docs())
    with pytest.raises(InputError, match=message):
        index.add([doc])
    assert index.stats()["documents"] == 3


def test_bad_collection_names_and_pages(index: Index):
    with pytest.raises(InputError, match="collection name"):
        index.add(docs(), collection="")
    with pytest.raises(InputError, match="offset"):
        index.documents(offset=2**64)
    with pytest.raises(InputError, match="limit"):
        index.documents(limit=-1)


def test_searches_do_not_wait_for_a_write_batch(index: Index):
    """data_version is read without the write lock: a search runs while a write is open."""
    import threading

    index.add(docs())
    results = []
    with index.store.write():  # hold the writer's lock and an open transaction
        worker = threading.Thread(target=lambda: results.append(index.search("silver key")))
        worker.start()
        worker.join(timeout=5)
        assert not worker.is_alive(), "the search waited for the write"
    assert results[0][0].document_id == "mira"


def test_unknown_collection_settings_are_errors(index: Index):
    with pytest.raises(InputError, match="unknown collection setting.*chunk_size"):
        index.configure(chunk_size=600)


def test_concurrent_writers_in_one_process_keep_memory_equal_to_the_file(tmp_path: Path):
    """Threads writing overlapping ids: the in-memory index must match a fresh open."""
    import threading

    path = tmp_path / "race.db"
    failures: list[BaseException] = []
    with Index(path) as index:
        index.add([Document("seed", "seed text")])

        def writer(version: int) -> None:
            try:
                for start in range(0, 120, 10):
                    index.add(
                        [
                            Document(f"d{i}", f"lantern {i} version {version} " + "word " * 20)
                            for i in range(start, start + 10)
                        ]
                    )
                    if start % 30 == 0:
                        index.delete(f"d{start}")
            except BaseException as exc:  # noqa: BLE001 - reported below, in the main thread
                failures.append(exc)

        threads = [threading.Thread(target=writer, args=(v,)) for v in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert [f for f in failures if not isinstance(f, NotFound)] == []
        live = {
            q: [(h.chunk_id, h.score) for h in index.search(q, top_k=200)]
            for q in ("lantern version", "lantern 7", "seed")
        }
    with Index(path) as fresh:
        again = {q: [(h.chunk_id, h.score) for h in fresh.search(q, top_k=200)] for q in live}
    assert live == again


# --- nothing with content is silently dropped -----------------------------------------------


@pytest.mark.parametrize("body", ["", "   \n\t ", "\n***\n"])
def test_a_titled_document_without_a_body_is_one_searchable_chunk(index: Index, body: str):
    # A public collection where half the documents are titles only lost half its corpus.
    report = index.add(
        [
            Document("t1", body, title="Rate limiting and throttling"),
            Document("t2", "", title=None),  # no title, no body: nothing to find
        ]
    )
    assert (report.documents, report.chunks) == (2, 1)
    (hit,) = index.search("throttling")
    assert (hit.chunk_id, hit.title, hit.text, hit.start, hit.end) == (
        "t1-0",
        "Rate limiting and throttling",
        "",
        0,
        0,
    )
    assert "[1] title: Rate limiting and throttling" in index.context("throttling").text


def test_a_titled_markdown_document_without_a_body_keeps_its_heading_metadata(index: Index):
    index.add([Document("notes.md", "", title="Empty page", source="notes.md")])
    (hit,) = index.search("empty page")
    assert hit.metadata == {"headings": []}


def test_a_short_body_is_kept_whole_with_its_title(index: Index):
    index.add([Document("s", "Yes.", title="Is the bell drowned")])
    (hit,) = index.search("drowned bell")
    assert (hit.text, hit.title) == ("Yes.", "Is the bell drowned")


def test_the_report_counts_fragments_dropped_by_the_minimum_length(index: Index, tmp_path):
    long = "Mira climbs the lighthouse stairs every night to tend the lamp. " * 2
    text = f"{long}\n\n***\n\nOk.\n\n***\n\n{long}\n\n***\n\nNo.\n"
    report = index.add([Document("frag", text)])
    assert (report.chunks, report.fragments) == (2, 2)
    assert report.to_dict()["fragments"] == 2
    (tmp_path / "frag.txt").write_text(text)
    file_report = index.index_path(tmp_path / "frag.txt", collection="files")
    assert (file_report.chunks, file_report.fragments) == (2, 2)
    again = index.add([Document("frag", text)])
    assert (again.unchanged, again.fragments) == (1, 0)


def test_max_per_caps_only_hits_that_have_the_key(index: Index):
    grace = "Grace in Romans {n}: the gift given freely, grace upon grace."
    documents = [
        Document(f"calvin-{n}", grace.format(n=n), metadata={"scholar_id": "calvin"})
        for n in range(3)
    ] + [Document(f"study-{n}", grace.format(n=n), metadata={"type": "faq"}) for n in range(3)]
    index.add(documents)
    capped = index.search("grace", top_k=10, diversity={"max_per": {"scholar_id": 2}})
    assert sum(h.document_id.startswith("calvin") for h in capped) == 2
    assert sum(h.document_id.startswith("study") for h in capped) == 3
    grouped = index.search(
        "grace", top_k=10, diversity={"max_per": {"scholar_id": 2}, "missing": "group"}
    )
    assert sum(h.document_id.startswith("study") for h in grouped) == 2
    assert sum(h.document_id.startswith("calvin") for h in grouped) == 2
