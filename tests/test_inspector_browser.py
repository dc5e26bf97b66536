"""The inspector page in a real browser: Playwright driving the system's Chromium.

Chromium comes from the distribution (`apt-get install chromium`; `.ci/run` installs it);
Playwright's own browser download is not used. Screenshots go to tests/artifacts/.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

import ragloom
from ragloom.answer import NOT_COVERED
from tests.server_launch import ServerProcess

from .format_files import report_pdf
from .llm_server import LLMServer
from .scenario_data import NOVEL_CHAPTERS, write_lore

CHROMIUM = os.environ.get("RAGLOOM_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
ARTIFACTS = Path(__file__).parent / "artifacts"
TOKEN = "browser-secret"
# Generous waits: on a loaded 2-core machine the first hybrid query (model warm-up) is slow.
WAIT_MS = 60_000
expect.set_options(timeout=WAIT_MS)


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        message = f"{CHROMIUM} not found: apt-get install chromium (or set RAGLOOM_CHROMIUM)"
        if os.environ.get("CI"):
            pytest.fail(message)  # CI installs it: a missing browser is a broken setup
        pytest.skip(message)
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def index_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Lore files and novel chapters, embedded with the local model (hybrid search)."""
    base = tmp_path_factory.mktemp("browser")
    path = base / "index.db"
    with ragloom.Index(path, embedder="local") as index:
        index.index_path(write_lore(base / "lore"), "lore")
        index.add(NOVEL_CHAPTERS, "chapters")
    return path


@pytest.fixture(scope="module")
def server(index_file: Path):
    with ServerProcess(index_file, env={"RAGLOOM_EMBEDDER": "auto"}) as live:
        yield live


def open_page(browser: Browser, url: str) -> tuple[Page, list[str]]:
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(WAIT_MS)
    problems: list[str] = []
    page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url}"))
    page.goto(f"{url}/ui")
    return page, problems


def test_query_filter_explanation_and_source(browser: Browser, server: ServerProcess) -> None:
    page, problems = open_page(browser, server.url)
    rows = page.locator("#stats-table tbody tr")
    expect(rows).to_have_count(2)
    expect(page.locator('#stats-table tr[data-collection="chapters"] td.pending')).to_have_text("0")
    page.select_option("#collection", "chapters")
    page.fill("#query", "Mira and the drowned bell")
    page.fill("#top-k", "10")
    page.click("#search-button")
    hits = page.locator(".hit")
    expect(hits.first).to_be_visible()
    assert hits.count() >= 5
    assert "Chapter 1" in page.locator(".hit-title").all_inner_texts()
    expect(page.locator("#summary")).to_contain_text("mode hybrid")
    for stage in ("lexical", "dense", "fusion", "hydrate"):
        expect(page.locator(f'#timings [data-stage="{stage}"]')).to_be_visible()
    badges = page.locator(".hit .badge").all_inner_texts()
    assert set(badges) <= {"lexical", "dense", "both"} and "both" in badges
    marks = page.locator(".hit").first.locator(".hit-text mark").all_inner_texts()
    assert {m.lower() for m in marks} >= {"drowned", "bell"}

    # A metadata filter: only chapters 2 and later.
    page.fill("#filter", '{"chapter": {"$gte": 2}}')
    page.click("#search-button")
    expect(page.locator("#summary")).to_contain_text("filtered")
    titles = page.locator(".hit-title").all_inner_texts()
    assert titles and "Chapter 1" not in titles
    assert all(int(t.split()[-1]) >= 2 for t in titles)

    # The per-stage explanation of the best hit.
    first = page.locator(".hit").first
    explain = first.locator(".explain")
    expect(explain).to_be_hidden()
    first.locator("button.why").click()
    expect(explain).to_be_visible()
    expect(explain).to_contain_text("lexical leg")
    expect(explain).to_contain_text("dense leg")
    expect(explain).to_contain_text("final score")
    expect(explain.locator("dd").nth(3)).to_contain_text("→")  # fusion -> its score

    # The source document with the chunk's span marked.
    first.locator("button.open-document").click()
    span = page.locator("#document-text mark.span")
    expect(span).to_be_visible()
    assert span.inner_text().strip() == first.locator(".hit-text").inner_text().strip()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "inspector.png"), full_page=True)
    assert (ARTIFACTS / "inspector.png").stat().st_size > 10_000
    assert problems == []
    page.close()


def test_errors_are_shown_with_code_and_hint(browser: Browser, server: ServerProcess) -> None:
    page, _ = open_page(browser, server.url)
    expect(page.locator("#stats-table tbody tr")).to_have_count(2)
    page.fill("#query", "bell")
    page.fill("#filter", '{"chapter": {"$near": 2}}')
    page.click("#search-button")
    message = page.locator("#message")
    expect(message).to_be_visible()
    expect(message).to_contain_text("HTTP 400")
    page.fill("#filter", "{not json")
    page.click("#search-button")
    expect(message).to_contain_text("not valid JSON")
    page.close()


@pytest.mark.parametrize(
    "payload",
    [
        {"ok": False, "error": "no collection 'x'", "code": "not_found", "hint": "known: a"},
        {
            "ok": False,
            "error": {"code": "not_found", "message": "no collection 'x'", "hint": "known: a"},
        },
    ],
    ids=["flat-envelope", "nested-envelope"],
)
def test_both_error_envelopes_are_read(
    browser: Browser, server: ServerProcess, payload: dict
) -> None:
    page, _ = open_page(browser, server.url)
    expect(page.locator("#stats-table tbody tr")).to_have_count(2)
    parsed = page.evaluate(
        "(p) => { const e = readError(404, p); return [e.message, e.code, e.hint]; }", payload
    )
    assert parsed == ["no collection 'x'", "not_found", "known: a"]
    page.close()


def test_token_is_asked_for_and_sent(browser: Browser, index_file: Path) -> None:
    env = {"RAGLOOM_EMBEDDER": "auto"}
    with ServerProcess(index_file, token=TOKEN, env=env) as live:
        page, _ = open_page(browser, live.url)
        message = page.locator("#message")
        expect(message).to_contain_text("HTTP 401")
        expect(message).to_contain_text("token")
        page.fill("#token", TOKEN)
        page.click("#token-form button")
        expect(page.locator("#stats-table tbody tr")).to_have_count(2)
        expect(message).to_be_hidden()
        page.select_option("#collection", "lore")
        page.fill("#query", "star-glass")
        page.click("#search-button")
        expect(page.locator(".hit").first).to_be_visible()
        page.close()


def test_a_pdf_hit_shows_its_page(browser: Browser, tmp_path: Path) -> None:
    papers = tmp_path / "papers"
    papers.mkdir()
    (papers / "survey.pdf").write_bytes(report_pdf())
    with ragloom.Index(tmp_path / "pdf.db", embedder="none") as index:
        index.index_path(papers)
    with ServerProcess(tmp_path / "pdf.db", env={"RAGLOOM_EMBEDDER": "none"}) as live:
        page, problems = open_page(browser, live.url)
        page.fill("#query", "obsidian mirrors")
        page.click("#search-button")
        first = page.locator(".hit").first
        expect(first.locator(".where")).to_contain_text("survey.pdf-")
        expect(first.locator(".where")).to_contain_text(" · p. 2 · ")
        first.locator("button.open-document").click()
        expect(page.locator("#document-meta")).to_contain_text(", p. 2, chars")
        assert problems == []
        page.close()


def test_the_ask_box_streams_an_answer_with_its_sources(browser: Browser, index_file: Path):
    """The Ask box against a server whose model is a loopback stand-in (OpenAI's streamed
    protocol): the text appears while the model is still sending it, then its sources, each
    [n] of the answer a link to its passage; a citation of no passage is taken out; an
    off-topic question is answered "not covered" without the model."""
    with LLMServer() as model:
        model.piece_delay = 0.4  # the answer takes seconds to arrive: it must show as it comes
        model.responder = lambda messages: (
            "Kaelen Voss carries a brass compass [1] that points toward what its holder fears"
            " most [7]. He owes the Guild three years [1]."
        )
        env = {"RAGLOOM_EMBEDDER": "auto", "RAGLOOM_LLM": f"openai:tiny@{model.url}?timeout=20"}
        with ServerProcess(index_file, env=env) as live:
            page, problems = open_page(browser, live.url)
            expect(page.locator("#stats-table tbody tr")).to_have_count(2)
            page.select_option("#collection", "lore")
            page.fill("#ask-question", "What does Kaelen Voss carry?")
            page.click("#ask-button")
            answer = page.locator("#answer")
            expect(answer).to_contain_text("Kaelen Voss carries")
            assert page.locator("#answer-status").inner_text() == "answering…"
            expect(page.locator("#answer-sources li")).to_have_count(1)
            assert "[7]" not in answer.inner_text()
            assert answer.inner_text().endswith("He owes the Guild three years [1].")
            expect(page.locator("#answer-status")).to_contain_text("cited no passage given: [7]")
            source = page.locator("#answer-sources li").first
            expect(source).to_contain_text("characters.md")
            assert "compass" in source.locator(".snippet").inner_text()
            page.locator("#answer a.cite").first.click()
            source.locator("button.open-document").click()
            expect(page.locator("#document-text mark.span")).to_be_visible()
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "inspector-ask.png"), full_page=True)

            requests_before = len(model.chat_requests())
            page.fill("#ask-question", "quantum chromodynamics of gluon plasma")
            page.click("#ask-button")
            expect(page.locator("#answer-status")).to_contain_text("not covered")
            expect(answer).to_have_text(NOT_COVERED)
            assert len(model.chat_requests()) == requests_before
            assert problems == []
            page.close()
