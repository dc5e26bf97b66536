"""Converted formats end to end: every file of a folder accounted for, each hit placed on
its page, slide or cell, sections from the documents' own structure, unchanged files never
converted again, and hostile files named without ending the run."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest

import tests.format_files as make
from ragloom import Index
from ragloom.convert import ConversionPool, convert_bytes, shared_pool
from ragloom.errors import ConvertTimeout, DocumentError
from ragloom.loading import ReadPolicy
from tests.test_cli import ragloom


def write(path: Path, data: bytes | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The issue's folder: one of each format, the hostile ones, a note and a picture."""
    root = tmp_path_factory.mktemp("formats") / "mixed"
    write(root / "survey.pdf", make.report_pdf())
    write(root / "article.html", make.html())
    write(root / "manual.docx", make.docx())
    write(root / "talk.pptx", make.pptx())
    write(root / "book.epub", make.epub())
    write(root / "tides.ipynb", make.notebook())
    write(root / "stations.csv", "name,text,lamps\nGreyhaven,A granite tower with a red lamp,4\n")
    write(root / "locked.pdf", make.encrypted(make.report_pdf()))
    write(root / "scan.pdf", make.pdf([[(11, "")]] * 2, image_only=True))
    write(root / "bomb.docx", make.zip_bomb("docx"))
    write(root / "note.md", "# Note\n\nRemember the spare wicks for the lamp room.\n")
    write(root / "images" / "photo.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(64))
    return root


@pytest.fixture(scope="module")
def indexed(folder: Path, tmp_path_factory: pytest.TempPathFactory):
    path = tmp_path_factory.mktemp("formats-index") / "i.db"
    with Index(path, embedder="none") as index, pytest.warns(UserWarning):
        report = index.index_path(folder)
    yield path, report


def test_every_file_is_indexed_left_out_or_named(indexed) -> None:
    _, report = indexed
    failed = {Path(f.path).name: f.code for f in report.failed}
    assert failed == {
        "locked.pdf": "password_protected",
        "scan.pdf": "no_text_layer",
        "bomb.docx": "archive_too_large",
    }
    assert [(Path(p).name, rule) for p, rule in report.left_out] == [
        ("photo.png", "image (left out by default)")
    ]
    assert report.skipped == []
    # 11 files read (the picture is not), 8 of them indexed: one document each, the CSV's
    # one row a record.
    assert report.files == 11 and report.documents == 8


def test_the_command_names_the_bad_files_and_exits_1(folder: Path, tmp_path: Path) -> None:
    proc = ragloom("index", str(folder), index=tmp_path / "c.db")
    assert proc.returncode == 1
    assert "password-protected PDF" in proc.stderr and "no text layer" in proc.stderr
    assert "archive expands past the limit" in proc.stderr
    assert "8 document(s)" in proc.stdout and "1 left out by rules" in proc.stdout
    only_pdf = ragloom("index", str(folder), "--include", "*.pdf", index=tmp_path / "p.db")
    assert "1 document(s)" in only_pdf.stdout and "9 left out by rules" in only_pdf.stdout


def test_pdf_hits_carry_their_page_and_read_clean(indexed) -> None:
    path, _ = indexed
    with Index(path, embedder="none") as index:
        text = index.document_text("survey.pdf")
        hits = index.search("obsidian mirrors polished", top_k=1)
        block = index.context("copper reflectors conclusion", top_k=1)
    assert "Lighthouse Survey 2024" not in text and "Page 2 of 3" not in text  # running lines
    assert "most reliable ones" in text  # the word split at the line end, rejoined
    assert "Station | Lamps | Range\nGreyhaven | 4 | 18 nm" in text  # a table as rows
    hit = hits[0]
    assert hit.document_id == "survey.pdf" and hit.metadata["page"] == 2
    assert hit.metadata["headings"] == ["Chapter 2"] and hit.place == "p. 2"
    assert text[hit.start : hit.end] == hit.text
    assert "survey.pdf, p. 3" in block.text and block.passages[0].place == "p. 3"


def test_a_chunk_over_a_page_break_lists_both_pages(tmp_path: Path) -> None:
    pages = [[(11, f"Harbour pilot log entry {n} about the tides of the bay.")] for n in (1, 2)]
    write(tmp_path / "log.pdf", make.pdf(pages))
    with Index(tmp_path / "i.db", embedder="none") as index:
        index.index_path(tmp_path / "log.pdf")
        hits = index.search("harbour pilot log", top_k=1)
    assert hits[0].metadata["page"] == 1 and hits[0].metadata["pages"] == [1, 2]
    assert hits[0].place == "pp. 1-2"


def test_html_keeps_the_article_only(indexed, folder: Path) -> None:
    path, _ = indexed
    with Index(path, embedder="none") as index:
        text = index.document_text("article.html")
        doc = next(d for d in index.documents() if d.doc_id == "article.html")
        storm = index.search("great storm lantern room", top_k=1)[0]
    for chrome in ("Navword", "cookieword", "footerword", "scriptword", "color:red"):
        assert chrome not in text
    assert "keeper of Greyhaven" in text and doc.title == "The Keeper's Log | Harbour News"
    assert storm.metadata["headings"][-1] == "The great storm"


def test_html_declared_charset_is_honoured() -> None:
    page = make.html(charset="iso-8859-1", word="hiver glacé")
    converted = convert_bytes("html", page, "latin.html")
    assert "hiver glacé" in converted.text and converted.metadata["charset"] == "iso8859-1"


def test_word_slides_book_notebook_and_table(indexed) -> None:
    path, _ = indexed
    with Index(path, embedder="none") as index:
        rouge = index.search("parabolic reflector rouge", top_k=1)[0]
        dawn = index.search("measured at dawn", top_k=1)[0]
        chamois = index.search("chamois polishing brass", top_k=1)[0]
        notes = index.search("brass telescope", top_k=1)[0]
        storm = index.search("seaward windows November", top_k=1)[0]
        book = index.document_text("book.epub")
        tide = index.search("tide_height", top_k=3)
        peak = index.search("peak", top_k=1)[0]
        granite = index.search("granite tower red lamp", top_k=1)[0]
    assert rouge.document_id == "manual.docx" and rouge.metadata["headings"] == ["Lamps", "Mirrors"]
    assert dawn.document_id == "manual.docx" and dawn.metadata["headings"] == ["Footnotes"]
    assert "Chamois | Polishing brass" in chamois.text
    assert notes.document_id == "talk.pptx" and notes.metadata["slide"] == 2
    assert notes.metadata["headings"] == ["Night watch"] and notes.place == "slide 2"
    assert storm.metadata["headings"] == ["The Storm"]
    assert book.index("The Tower") < book.index("The Storm")  # spine order, not manifest
    code = next(h for h in tide if h.metadata.get("kind") == "function")
    assert code.metadata["cell"] == 2 and code.metadata["symbol"] == "tide_height"
    assert peak.metadata["cell"] == 2 and peak.place == "cell 2"  # a short output, kept
    assert granite.document_id.endswith("stations.csv:2") and granite.metadata["lamps"] == 4


def test_reindex_converts_nothing_and_keeps_ids_and_offsets(folder: Path, tmp_path: Path) -> None:
    pool = shared_pool()
    path = tmp_path / "i.db"
    with Index(path, embedder="none") as index, pytest.warns(UserWarning):
        index.index_path(folder)
        before = {h.chunk_id: (h.start, h.end) for h in index.search("keeper lamp", top_k=50)}
        asked = pool.submitted
        again = index.index_path(folder)
        after = {h.chunk_id: (h.start, h.end) for h in index.search("keeper lamp", top_k=50)}
    assert pool.submitted - asked == 3  # only the three files that failed are tried again
    assert again.documents == 0 and again.unchanged == 8 and after == before


def test_a_policy_change_rechunks_from_a_fresh_conversion(tmp_path: Path) -> None:
    write(tmp_path / "d" / "survey.pdf", make.report_pdf())
    with Index(tmp_path / "i.db", embedder="none") as index:
        first = index.index_path(tmp_path / "d")
        index.configure(chunking={"max_chars": 120, "overlap": 20, "min_chars": 10})
        second = index.index_path(tmp_path / "d")
    assert first.documents == second.documents == 1 and second.chunks > first.chunks


def test_a_thousand_page_pdf_is_read_whole() -> None:
    converted = convert_bytes("pdf", make.long_pdf(1000), "long.pdf")
    assert len(converted.structure.starts) == 1000
    last = converted.structure.starts[-1]
    assert converted.text[last:].startswith("Page 1000 tells")


@pytest.mark.parametrize(
    ("name", "data", "expected"),
    [
        ("loop.pdf", make.pdf([[(11, "looped tree pages")]] * 2, loop=True), "looped tree"),
        ("xref.pdf", make.pdf([[(11, "broken xref pages")]], broken_xref=True), "broken xref"),
        ("many.pdf", make.pdf([[(11, "padding objects")]], padding_objects=200_000), "padding"),
    ],
)
def test_hostile_pdfs_are_read_or_named(name: str, data: bytes, expected: str) -> None:
    assert expected in shared_pool().submit("pdf", data, name, 60).result().text


def test_entity_declarations_are_refused() -> None:
    with pytest.raises(DocumentError, match="declares XML entities"):
        shared_pool().submit("docx", make.entity_bomb_docx(), "lol.docx").result()
    with pytest.raises(DocumentError, match="archive expands past the limit"):
        shared_pool().submit("epub", make.zip_bomb("epub"), "bomb.epub").result()


def test_a_crashing_or_hanging_converter_costs_one_file_only() -> None:
    pool = ConversionPool(workers=1)
    try:
        assert "hello" in pool.submit("pdf", make.pdf([[(11, "hello")]]), "warm.pdf").result().text
        big = make.long_pdf(3000)
        hanging = pool.submit("pdf", big, "slow.pdf", timeout=0.05)
        with pytest.raises(ConvertTimeout, match="slow.pdf took longer than"):
            hanging.result()
        crashing = pool.submit("pdf", big, "crash.pdf", timeout=120)
        deadline = time.monotonic() + 60
        while not pool.pids and time.monotonic() < deadline:
            time.sleep(0.01)
        while crashing.running() is False and time.monotonic() < deadline:
            time.sleep(0.01)
        os.kill(pool.pids[0], signal.SIGSEGV)
        with pytest.raises(DocumentError, match="converter crashed on crash.pdf .SIGSEGV"):
            crashing.result()
        after = pool.submit("pdf", make.pdf([[(11, "still here")]]), "after.pdf").result()
        assert "still here" in after.text
    finally:
        pool.close()


def test_a_conversion_time_limit_names_the_file_in_a_run(tmp_path: Path) -> None:
    write(tmp_path / "d" / "long.pdf", make.long_pdf(3000))
    write(tmp_path / "d" / "note.txt", "the note about pilots survives")
    with Index(tmp_path / "i.db", embedder="none") as index, pytest.warns(UserWarning):
        report = index.index_path(tmp_path / "d", policy=ReadPolicy(convert_timeout=0.01))
    assert [(Path(f.path).name, f.code) for f in report.failed] == [("long.pdf", "convert_timeout")]
    assert report.documents == 1


def test_readme_command_on_docs_exits_0(tmp_path: Path) -> None:
    docs = Path(__file__).resolve().parents[1] / "docs"
    proc = ragloom("index", str(docs), index=tmp_path / "docs.db")
    assert proc.returncode == 0, proc.stderr
    assert f"{len(list((docs / 'images').iterdir()))} left out by rules" in proc.stdout
    assert sys.executable  # the command ran with this interpreter (test_cli.ragloom)


def test_a_mixed_folder_is_accounted_for_file_by_file(tmp_path: Path) -> None:
    expected = make.mixed_folder(tmp_path / "mixed", 60)
    with Index(tmp_path / "i.db", embedder="none") as index, pytest.warns(UserWarning):
        report = index.index_path(tmp_path / "mixed")
    named = sorted(Path(f.path).name for f in report.failed)
    left = sorted(Path(p).name for p, _ in report.left_out)
    assert named == sorted(expected["failed"]) and left == sorted(expected["left_out"])
    assert report.files == len(expected["indexed"]) + len(expected["failed"])
    assert report.skipped == []


def test_http_and_tools_index_and_place_a_pdf(tmp_path: Path) -> None:
    import httpx

    from ragloom.tools import Toolbox
    from tests.server_launch import ServerProcess

    root = tmp_path / "root"
    write(root / "papers" / "survey.pdf", make.report_pdf())
    env = {"RAGLOOM_EMBEDDER": "none"}
    with (
        ServerProcess(tmp_path / "s.db", roots=[root], env=env) as server,
        httpx.Client(base_url=server.url, timeout=120) as http,
    ):
        done = http.post("/index", json={"path": str(root / "papers")}).json()
        answer = http.post("/query", json={"query": "obsidian mirrors", "top_k": 1}).json()
    assert done["documents"] == 1 and done["failed"] == []
    hit = answer["results"][0]
    assert hit["metadata"]["page"] == 2 and hit["metadata"]["headings"] == ["Chapter 2"]
    with Index(tmp_path / "t.db", embedder="none") as index:
        index.index_path(root / "papers")
        found = Toolbox(index).search("obsidian mirrors", top_k=1)["results"][0]
    assert found["place"] == "p. 2"


def test_a_library_document_with_a_bad_structure_is_refused(tmp_path: Path) -> None:
    from ragloom import Document, InputError, Structure

    with Index(tmp_path / "i.db", embedder="none") as index:
        with pytest.raises(InputError, match="structure must be a ragloom.Structure"):
            index.add([Document("d", "text", structure={"unit": "page"})])  # type: ignore[arg-type]
        pages = Structure("page", (0, 30))
        index.add(
            [Document("d", "first page text about anchors.\n\nsecond page.", structure=pages)]
        )
        hit = index.search("anchors", top_k=1)[0]
    assert hit.metadata["page"] == 1


def test_a_tsv_without_a_text_column_takes_its_wordiest(tmp_path: Path) -> None:
    rows = "code\tnote\tdepth\nA1\tA sandbar shifts after every spring storm\t4.5\n"
    write(tmp_path / "soundings.tsv", rows)
    with Index(tmp_path / "i.db", embedder="none") as index:
        index.index_path(tmp_path / "soundings.tsv")
        hit = index.search("sandbar spring storm", top_k=1)[0]
    assert hit.text == "A sandbar shifts after every spring storm"
    assert hit.metadata["code"] == "A1" and hit.metadata["depth"] == 4.5
