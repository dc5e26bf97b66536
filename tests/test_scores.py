"""The score contract (docs/search.md, "What a score means"), with the real local model:
no negative score, a lone hit above 0, scores comparable across the searches of a
collection so that `min_score` works (library, CLI, HTTP), raw leg scores kept."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

import ragloom
from tests.server_launch import ServerProcess

pytest.importorskip("onnxruntime")

NOTES = [
    ("mira", "Mira forged the silver key in the smithy under the lighthouse.", "Mira"),
    ("oren", "Oren the smuggler owes a debt to the harbour master of Greyhaven.", "Oren"),
    ("bell", "The drowned bell of Greyhaven rings when a storm comes in from the sea.", "Bell"),
    ("gate", "The north gate opens only for the one who carries the silver key.", "Gate"),
    ("tide", "Spring tides flood the lower streets of the old town twice a year.", "Tides"),
    ("cook", "The inn's cook bakes rye bread with caraway every market morning.", "Inn"),
    ("road", "The coast road to the capital is closed by landslides in winter.", "Roads"),
    ("tower", "A lamp burns at the top of the lighthouse tower every night.", "Tower"),
]
RELEVANT = "who forged the silver key?"
UNRELATED = "annual tax report of the lighthouse company"  # only "lighthouse" is in the notes


def notes() -> list[ragloom.Document]:
    return [ragloom.Document(id=i, text=t, title=title) for i, t, title in NOTES]


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("scores") / "story.db"
    with ragloom.Index(path, embedder="local") as index:
        index.add(notes())
    return path


def test_a_lone_hit_scores_its_match_not_zero(tmp_path: Path) -> None:
    """The README's example: one document, one hit (it scored 0.0 as a z-score of one)."""
    with ragloom.Index(tmp_path / "one.db", embedder="local") as index:
        index.add(
            [ragloom.Document(id="note-1", text="Mira forged the silver key.", title="Notes")]
        )
        hits = index.search("silver key", top_k=3, explain=True)
        assert hits.mode == "hybrid" and len(hits) == 1
        (hit,) = hits
        assert hit.match == "both" and hit.score > 0.2
        fusion, legs = hit.explain["fusion"], hit.explain["legs"]
        assert legs["lexical"]["score"] == hit.lexical_score > 0  # raw BM25 kept
        assert legs["dense"]["cosine"] == hit.dense_score  # raw cosine kept
        ceiling = fusion["why"]["lexical_ceiling"]
        assert fusion["shares"]["lexical"] == pytest.approx(hit.lexical_score / ceiling, rel=1e-4)
        assert fusion["shares"]["dense"] == pytest.approx(hit.dense_score)
        weights = fusion["weights"]
        assert hit.score == pytest.approx(
            weights["lexical"] * fusion["shares"]["lexical"]
            + weights["dense"] * fusion["shares"]["dense"],
            abs=1e-4,
        )


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"fusion": "weighted"},
        {"fusion": "weighted", "normalization": "minmax"},
        {"fusion": "rrf"},
        {"mode": "lexical"},
        {"mode": "dense"},
    ],
)
def test_no_score_is_negative(story: Path, options: dict) -> None:
    with ragloom.Index(story) as index:
        for query in (RELEVANT, UNRELATED, "bell", "???", "the lighthouse and the sea"):
            hits = index.search(query, top_k=8, **options)
            assert all(hit.score >= 0.0 for hit in hits), (query, [h.score for h in hits])


def test_scores_are_between_zero_and_one_and_say_how_well_a_hit_matches(story: Path) -> None:
    with ragloom.Index(story) as index:
        good = index.search(RELEVANT, top_k=8)
        poor = index.search(UNRELATED, top_k=8)
        assert good[0].document_id == "mira"
        assert all(0.0 <= h.score <= 1.0 for h in [*good, *poor])
        # the best hit of a question the notes answer outscores the best of one they do not
        assert good[0].score > poor[0].score + 0.15
        lexical = index.search("silver key", top_k=3, mode="lexical")
        assert lexical[0].score <= 1.0 < lexical[0].lexical_score  # a share; raw BM25 kept
        dense = index.search(RELEVANT, top_k=3, mode="dense")
        assert dense[0].score == pytest.approx(max(dense[0].dense_score, 0.0))


ANSWERED = [
    RELEVANT,
    "why does the drowned bell ring?",
    "what floods the lower streets?",
    "what does the inn's cook bake?",
    "who owes a debt to the harbour master?",
]
UNANSWERED = [
    UNRELATED,
    "the price of shares on the stock market",
    "football match results from the weekend",
]
CUT = 0.3  # one cut-off for every search of the collection


def test_one_cut_off_separates_answered_from_unanswered_questions(story: Path) -> None:
    """Scores mean the same in every search: the best hit of each question the notes answer
    scores above one fixed cut-off, the best hit of each they do not answer below it (with
    z-scores every search's best hit scored about the same, 1.3-2.0)."""
    with ragloom.Index(story) as index:
        answered = [index.search(q, top_k=1)[0].score for q in ANSWERED]
        unanswered = [index.search(q, top_k=1)[0].score for q in UNANSWERED]
        assert min(answered) > CUT > max(unanswered), (answered, unanswered)
        assert min(answered) - max(unanswered) > 0.1
        for query in ANSWERED:
            kept = index.search(query, top_k=8, min_score=CUT)
            assert kept and all(h.score >= CUT for h in kept)
        for query in UNANSWERED:
            assert len(index.search(query, top_k=8, min_score=CUT)) == 0
            assert len(index.search(query, top_k=8)) > 0  # without the cut-off it answers


def test_min_score_on_the_command_line(story: Path) -> None:
    cut = CUT

    def search(query: str) -> list[dict]:
        done = subprocess.run(
            [sys.executable, "-m", "ragloom", "--index", str(story), "search", query]
            + ["--top-k", "8", "--min-score", str(cut), "--json"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)["results"]

    hits = search(RELEVANT)
    assert hits and all(h["score"] >= cut for h in hits)
    assert search(UNRELATED) == []


def test_min_score_over_http(story: Path) -> None:
    cut = CUT
    with ServerProcess(story) as server, httpx.Client(base_url=server.url, timeout=60) as http:
        good = http.post("/query", json={"query": RELEVANT, "top_k": 8, "min_score": cut})
        poor = http.post("/query", json={"query": UNRELATED, "top_k": 8, "min_score": cut})
        assert good.status_code == 200 and poor.status_code == 200, (good.text, poor.text)
        assert good.json()["results"]
        assert all(h["score"] >= cut for h in good.json()["results"])
        assert poor.json()["results"] == []
