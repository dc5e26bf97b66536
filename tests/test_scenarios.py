"""The five uses in docs/architecture.md, end to end through the library, each on a corpus
written here.

The same scenarios run through the HTTP sidecar in tests/test_server_scenarios.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ragloom import Index
from ragloom.context import count_tokens
from ragloom.embedding.http import OpenAIEmbedder
from ragloom.embedding.local import LocalEmbedder
from ragloom.errors import EmbeddingOffline, EmbedFailed

from .embed_server import EmbedServer
from .scenario_data import (
    CODING_DOCS,
    DOCS_POSTS,
    LORE_FILES,
    NOVEL_CHAPTERS,
    NOVEL_CHARACTERS,
    NOVEL_WORLD,
    STUDY_COMMENTARY,
    STUDY_OPTIONS,
    expected_study_boost,
    write_lore,
)


@pytest.fixture(scope="module")
def local() -> LocalEmbedder:
    return LocalEmbedder()


def test_story_bible_top3_multi_file_survives_restart(tmp_path: Path):
    lore = write_lore(tmp_path / "lore")
    path = tmp_path / "bible.db"
    with Index(path) as index:
        report = index.index_path(lore)
        assert report.files == len(LORE_FILES)
        hits = index.search("What does Kaelen Voss carry?", top_k=3)
    assert len(hits) == 3 and hits[0].document_id == "characters.md"
    assert "Kaelen Voss" in hits[0].text
    with Index(path) as reopened:  # the sidecar restarts: same answers
        again = reopened.search("What does Kaelen Voss carry?", top_k=3)
        assert [h.chunk_id for h in again] == [h.chunk_id for h in hits]
        # names from several files are searchable together
        assert {h.document_id for h in reopened.search("Ashfall Spire Thornwick", top_k=3)} >= {
            "places.md",
            "plot.md",
        }


def test_study_app_boosts_caps_and_typed_embedding_errors(tmp_path: Path):
    with EmbedServer() as service:
        # cooldown=0: each failure below is a fresh call, not the remembered one
        embedder = OpenAIEmbedder(service.url, "remote-embed", retry_delay=0.01, cooldown=0)
        with Index(tmp_path / "study.db", embedder=embedder) as index:
            index.add(STUDY_COMMENTARY)
            hits = index.search("election mercy hardening", **STUDY_OPTIONS, explain=True)
            assert 0 < len(hits) <= 10
            per_scholar: dict[str, int] = {}
            for hit in hits:
                per_scholar[hit.metadata["scholar_id"]] = (
                    per_scholar.get(hit.metadata["scholar_id"], 0) + 1
                )
                expected = expected_study_boost(hit.metadata)
                assert hit.explain["boost_factor"] == pytest.approx(expected)
                assert hit.score == pytest.approx(hit.fused_score * expected)
            assert max(per_scholar.values()) <= 2
            # the cap keeps each scholar's best two of the uncapped ranking, in order
            uncapped = index.search(
                "election mercy hardening", **{**STUDY_OPTIONS, "diversity": None, "top_k": 40}
            )
            kept: list[str] = []
            seen: dict[str, int] = {}
            for hit in uncapped:
                scholar = hit.metadata["scholar_id"]
                if seen.get(scholar, 0) < 2:
                    kept.append(hit.chunk_id)
                    seen[scholar] = seen.get(scholar, 0) + 1
            assert [h.chunk_id for h in hits] == kept[:10]
            assert sum(1 for h in uncapped if h.metadata["scholar_id"] == "calvin") > 2
            assert all(a.score >= b.score for a, b in zip(hits, hits[1:]))
            # the service answers badly, then is gone: typed errors, never a silent answer
            service.mode = "500"
            with pytest.raises(EmbedFailed) as failed:
                index.search("grace and works", **STUDY_OPTIONS, strict=True)
            assert failed.value.code == "embed_failed"
            service.stop()
            with pytest.raises(EmbeddingOffline) as offline:
                index.search("faith alone", **STUDY_OPTIONS, strict=True)
            assert offline.value.code == "offline"
            degraded = index.search("faith alone", **STUDY_OPTIONS)  # asked for degradation
            assert degraded.degraded and degraded.reason.startswith("offline")


def test_docs_chat_rrf_identifiers_and_paraphrases(tmp_path: Path, local: LocalEmbedder):
    with Index(tmp_path / "docs.db", embedder=local) as index:
        index.configure(
            chunking={"max_chars": 600, "overlap": 100, "min_chars": 20}, title_weight=2
        )
        index.add(DOCS_POSTS)
        ident = index.search("safeFetch", top_k=3, fusion="rrf", rrf_k=60)
        assert ident[0].document_id == "safe-fetch-helper"
        assert ident[0].match in ("lexical", "both") and ident[0].lexical_rank == 1
        assert ident[0].chunk_id.startswith("safe-fetch-helper-")
        para = index.search("how do I keep my sourdough starter alive", top_k=3)
        assert para[0].document_id == "sourdough-notes"
        assert para[0].match in ("dense", "both")
        weak = index.search("quantum chromodynamics on lattices", top_k=5)
        assert weak.dense_floor == 0.25  # the local model's measured floor
        assert all(h.match != "dense" or h.dense_score >= weak.dense_floor for h in weak)
        assert {h.match for h in index.search("retry backoff timeout", top_k=6)} <= {
            "lexical",
            "dense",
            "both",
        }


def test_coding_knowledge_base_filters_weights_and_tokens(tmp_path: Path, local: LocalEmbedder):
    with Index(tmp_path / "code.db", embedder=local) as index:
        index.add(CODING_DOCS)
        hits = index.search(
            "persist models in SwiftData",
            top_k=5,
            fusion="weighted",
            weights={"dense": 0.55, "lexical": 0.30, "metadata": 0.15},
            prefer=[{"chunk_type": "api_doc"}],
            filters={
                "domain": "apple",
                "min_os": {"$version_lte": "18.0"},
                "tags": {"$overlap": ["SwiftData"]},
                "$not": {"deprecated": True},
            },
            explain=True,
            with_tokens=True,
        )
        assert hits, "the filters keep the SwiftData docs"
        for hit in hits:
            meta = hit.metadata
            assert meta["domain"] == "apple" and "SwiftData" in meta["tags"]
            assert not meta.get("deprecated")
            assert tuple(int(p) for p in meta["min_os"].split(".")) <= (18,)
            assert hit.tokens == count_tokens(hit.text) > 0
            assert hit.explain["fusion"]["method"] == "weighted"
        assert hits[0].document_id == "swiftdata-modelcontainer"
        # "9.0" < "18.0" as versions: an iOS 9 API passes a >= 9 range that excludes 8.x
        old = index.search(
            "networking",
            top_k=5,
            mode="lexical",
            filters={"min_os": {"$version_gte": "9.0", "$version_lt": "10"}},
        )
        assert [h.document_id for h in old] == ["nsurlsession-basics"]


def test_novel_memory_three_labelled_collections(tmp_path: Path):
    from ragloom.enrich.novel import novel_enrichers

    enrichers = novel_enrichers(characters=["Mira", "Oren", "Ilse", "the Warden"])
    with Index(tmp_path / "novel.db") as index:
        index.configure("chapters", chunking={"max_chars": 1000, "overlap": 200, "min_chars": 20})
        index.add(NOVEL_CHAPTERS, collection="chapters", enrichers=enrichers)
        index.add(NOVEL_CHARACTERS, collection="characters")
        index.add(NOVEL_WORLD, collection="world")
        scene_breaks = [h for h in index.search("Mira", top_k=50, collection="chapters")]
        assert all("***" not in h.text for h in scene_breaks)
        shared = {"filters": None}
        packed = index.context(
            "What does Mira know about the Warden and the drowned bell?",
            collections=[
                {
                    "collection": "chapters",
                    "top_k": 5,
                    "label": "Previous Scene",
                    "filters": {"$not": {"chapter": 3}, "importance": {"$gte": 6}},
                },
                {"collection": "characters", "top_k": 3, "label": "Character Info"},
                {"collection": "world", "top_k": 3, "label": "WORLD"},
            ],
            budget=900,
            **{k: v for k, v in shared.items() if v},
        )
        labels = [p.label for p in packed.passages]
        assert labels.count("Character Info") <= 3 and labels.count("WORLD") <= 3
        assert "[Previous Scene]" in packed.text and "[Character Info]" in packed.text
        chapter_hits = index.search(
            "Mira Warden bell",
            top_k=5,
            collection="chapters",
            filters={"$not": {"chapter": 3}, "importance": {"$gte": 6}},
        )
        assert chapter_hits and all(h.metadata["chapter"] != 3 for h in chapter_hits)
        assert all(h.metadata["importance"] >= 6 for h in chapter_hits)
        assert all(
            text.index(f"[{n}]") > 0
            for n, text in ((p.number, packed.text) for p in packed.passages)
        )
        assert packed.tokens <= 900
