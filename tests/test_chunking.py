"""Example-based tests for ragloom.chunking: one or more per documented rule."""

from __future__ import annotations

import json

import pytest

from ragloom.chunking import ChunkPolicy, chunk_text
from ragloom.chunking.prose import sentence_bounds
from ragloom.errors import InputError

MD = "markdown"


def sentences(n: int, start: int = 0) -> str:
    """n distinct short sentences joined by spaces (about 27 chars each)."""
    return " ".join(f"Sentence number {i} is here." for i in range(start, start + n))


def words(n: int) -> str:
    """n distinct words with no sentence punctuation at all."""
    return " ".join(f"word{i}" for i in range(n))


def assert_exact(text: str, chunks: list, max_chars: int | None = None) -> None:
    """Offsets reproduce the text, spans are trimmed, sizes bounded."""
    for c in chunks:
        assert text[c.start : c.end] == c.text
        assert c.text == c.text.strip() and c.text
        if max_chars:
            assert len(c.text) <= max_chars


# --- policy -----------------------------------------------------------------------------


def test_policy_defaults_and_round_trip() -> None:
    policy = ChunkPolicy()
    assert (policy.mode, policy.max_chars, policy.overlap, policy.min_chars) == (
        "prose",
        400,
        80,
        20,
    )
    d = ChunkPolicy(mode=MD, max_chars=300, overlap=10, min_chars=5).to_dict()
    assert json.loads(json.dumps(d)) == d
    assert d == {"mode": MD, "max_chars": 300, "overlap": 10, "min_chars": 5}
    assert ChunkPolicy.from_dict(d) == ChunkPolicy(MD, 300, 10, 5)
    assert ChunkPolicy.from_dict({}) == ChunkPolicy()


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"mode": "html"}, "mode"),
        ({"max_chars": -1}, "max_chars"),
        ({"overlap": -1}, "overlap"),
        ({"max_chars": 100, "overlap": 100}, "overlap"),
        ({"max_chars": 100, "overlap": 150}, "overlap"),
        ({"min_chars": -3}, "min_chars"),
        ({"max_chars": "400"}, "max_chars"),
        ({"overlap": 1.5}, "overlap"),
        ({"min_chars": True}, "min_chars"),
    ],
)
def test_policy_rejects_invalid(kwargs: dict, needle: str) -> None:
    with pytest.raises(InputError) as info:
        ChunkPolicy(**kwargs)
    assert needle in str(info.value)


def test_policy_zero_max_allows_any_overlap() -> None:
    assert ChunkPolicy(max_chars=0).overlap == 80


def test_min_chars_above_max_chars_loses_nothing() -> None:
    text = words(30)
    chunks = chunk_text(text, ChunkPolicy(max_chars=40, overlap=0, min_chars=100))
    assert_exact(text, chunks, 40)
    assert " ".join(c.text for c in chunks) == text


def test_policy_from_dict_rejects_unknown_fields_and_non_mapping() -> None:
    with pytest.raises(InputError, match="unknown field"):
        ChunkPolicy.from_dict({"max_chars": 10, "overlap": 0, "size": 3})
    with pytest.raises(InputError, match="mapping"):
        ChunkPolicy.from_dict(["prose"])  # type: ignore[arg-type]


# --- empty, short, whole ----------------------------------------------------------------


@pytest.mark.parametrize("text", ["", " ", "\n\n\t  \r\n", "\u00a0\u3000"])
def test_empty_or_whitespace_gives_nothing(text: str) -> None:
    assert chunk_text(text) == []
    assert chunk_text(text, ChunkPolicy(mode=MD)) == []


def test_short_document_is_kept_whole() -> None:
    text = "  \n Hi there. \n"
    (chunk,) = chunk_text(text)
    assert chunk.text == "Hi there."
    assert (chunk.start, chunk.end) == (4, 13)


def test_short_document_keeps_all_its_pieces() -> None:
    text = "Tiny.\n\n***\n\nToo."  # whole document shorter than min_chars
    assert [c.text for c in chunk_text(text)] == ["Tiny.", "Too."]


def test_max_chars_zero_is_one_trimmed_chunk() -> None:
    text = "\n\n" + sentences(50) + "\n\n***\n\nmore\n"
    (chunk,) = chunk_text(text, ChunkPolicy(max_chars=0))
    assert chunk.text == text.strip()
    assert_exact(text, [chunk])


# --- prose packing and splitting --------------------------------------------------------


def test_paragraphs_are_packed_up_to_max_chars() -> None:
    paras = [sentences(3, 10 * i) for i in range(5)]  # ~85 chars each
    text = "\n\n".join(paras)
    chunks = chunk_text(text, ChunkPolicy(max_chars=200, overlap=0, min_chars=0))
    assert [c.text for c in chunks] == [
        paras[0] + "\n\n" + paras[1],
        paras[2] + "\n\n" + paras[3],
        paras[4],
    ]
    assert_exact(text, chunks, 200)


def test_blank_lines_with_whitespace_still_separate_paragraphs() -> None:
    a, b = sentences(4), sentences(4, 50)
    text = a + "\n \t \n" + b
    chunks = chunk_text(text, ChunkPolicy(max_chars=120, overlap=0))
    assert [c.text for c in chunks] == [a, b]


def test_long_paragraph_splits_at_sentence_ends() -> None:
    text = sentences(40)
    chunks = chunk_text(text, ChunkPolicy(max_chars=200, overlap=0, min_chars=0))
    assert len(chunks) > 4
    assert_exact(text, chunks, 200)
    for c in chunks:
        assert c.text.startswith("Sentence number")
        assert c.text.endswith("is here.")
    assert " ".join(c.text for c in chunks) == text


@pytest.mark.parametrize("end", ["!", "?", "…", '."', ".\u201d", "!)"])
def test_other_sentence_ends_are_preferred(end: str) -> None:
    text = " ".join(f"Clause {i} goes on a bit{end}" for i in range(30))
    chunks = chunk_text(text, ChunkPolicy(max_chars=150, overlap=0, min_chars=0))
    assert_exact(text, chunks, 150)
    for c in chunks:
        assert c.text.endswith(end)


def test_abbreviations_before_lowercase_are_not_sentence_ends() -> None:
    text = "See e.g. the report. Then stop."
    ends, starts = sentence_bounds(text, 0, len(text))
    assert ends == [text.index("report.") + len("report.")]
    assert starts == [text.index("Then")]


def test_cjk_full_stops_are_sentence_ends() -> None:
    text = "今日は晴れです。明日は雨です。"
    ends, starts = sentence_bounds(text, 0, len(text))
    assert ends == [8] and starts == [8]


def test_falls_back_to_word_boundaries() -> None:
    text = words(200)
    chunks = chunk_text(text, ChunkPolicy(max_chars=100, overlap=0, min_chars=0))
    assert_exact(text, chunks, 100)
    for c in chunks:
        assert c.start == 0 or text[c.start - 1] == " "
        assert c.end == len(text) or text[c.end] == " "
    assert " ".join(c.text for c in chunks) == text


def test_hard_cut_only_for_words_longer_than_max() -> None:
    text = "short " + "x" * 250 + " tail words here"
    chunks = chunk_text(text, ChunkPolicy(max_chars=100, overlap=20, min_chars=0))
    assert_exact(text, chunks, 100)
    assert chunks[0].text == "short"
    assert [len(c.text) for c in chunks[1:3]] == [100, 100]
    assert "".join(c.text for c in chunks[1:4]).startswith("x" * 250)


def test_short_tail_is_merged_rather_than_dropped() -> None:
    body = sentences(5)  # ~140 chars
    text = body + "\n\nOk."
    chunks = chunk_text(text, ChunkPolicy(max_chars=200, overlap=0, min_chars=20))
    assert [c.text for c in chunks] == [text]


def test_split_leaves_a_last_piece_of_at_least_min_chars() -> None:
    text = words(40)  # 269 chars
    policy = ChunkPolicy(max_chars=260, overlap=0, min_chars=30)
    chunks = chunk_text(text, policy)
    assert len(chunks) == 2
    assert len(chunks[-1].text) >= 30
    assert " ".join(c.text for c in chunks) == text


# --- overlap ----------------------------------------------------------------------------


def test_overlap_starts_at_a_sentence_when_possible() -> None:
    text = sentences(30)
    policy = ChunkPolicy(max_chars=200, overlap=60, min_chars=0)
    chunks = chunk_text(text, policy)
    assert_exact(text, chunks, 200)
    for a, b in zip(chunks, chunks[1:]):
        assert 0 < a.end - b.start <= 60
        assert b.text.startswith("Sentence number")


def test_overlap_falls_back_to_a_word_start() -> None:
    text = words(120)
    chunks = chunk_text(text, ChunkPolicy(max_chars=100, overlap=30, min_chars=0))
    assert_exact(text, chunks, 100)
    for a, b in zip(chunks, chunks[1:]):
        assert 0 < a.end - b.start <= 30
        assert text[b.start - 1] == " "


def test_no_overlap_when_zero() -> None:
    text = sentences(30)
    chunks = chunk_text(text, ChunkPolicy(max_chars=200, overlap=0, min_chars=0))
    for a, b in zip(chunks, chunks[1:]):
        assert a.end < b.start


def test_huge_overlap_still_progresses() -> None:
    text = words(300)
    chunks = chunk_text(text, ChunkPolicy(max_chars=50, overlap=49, min_chars=0))
    assert_exact(text, chunks, 50)
    assert chunks[-1].end == len(text)
    for a, b in zip(chunks, chunks[1:]):
        assert a.start < b.start and a.end < b.end
        assert a.end - b.start <= 49


def chapter(paragraphs: int) -> str:
    """A chapter of short paragraphs (two or three sentences each, 60-100 characters)."""
    verbs = ("heard", "rang", "hid")
    return "\n\n".join(
        " ".join(f"Mira {verb} bell {p}." for verb in verbs[: 2 + p % 2]) for p in range(paragraphs)
    )


def test_packed_paragraphs_overlap_at_every_boundary() -> None:
    # The novel-writing use: 1,000 characters with 200 overlap over short paragraphs. Packed
    # chunks used to meet end to end (0-897, 900-1437): nothing was shared.
    text = chapter(40)
    chunks = chunk_text(text, ChunkPolicy(max_chars=1000, overlap=200, min_chars=20))
    assert_exact(text, chunks, 1000)
    assert len(chunks) >= 3
    for a, b in zip(chunks, chunks[1:]):
        assert 0 < a.end - b.start <= 200
        assert text[b.start - 1].isspace() and b.text.startswith("Mira")  # a sentence start
    assert chunks[0].start == 0 and chunks[-1].end == len(text)


def test_packed_overlap_prefers_the_earliest_sentence_in_the_window() -> None:
    text = "\n\n".join(sentences(3, 10 * i) for i in range(6))  # paragraphs of ~83 chars
    chunks = chunk_text(text, ChunkPolicy(max_chars=200, overlap=60, min_chars=0))
    for a, b in zip(chunks, chunks[1:]):
        window_starts = [
            m.start()
            for m in __import__("re").finditer(r"Sentence", text)
            if a.end - 60 <= m.start() < a.end
        ]
        assert b.start == window_starts[0]


def test_overlap_shrinks_to_keep_the_next_paragraph_whole() -> None:
    first = sentences(3)  # 83 chars
    second = sentences(6, 10)  # 170 chars: fits in 200 with up to 30 chars of overlap
    text = first + "\n\n" + second
    chunks = chunk_text(text, ChunkPolicy(max_chars=200, overlap=80, min_chars=0))
    assert [c.text for c in chunks] == [first, text[chunks[1].start :]]
    assert chunks[1].text.endswith(second)
    assert 0 < chunks[0].end - chunks[1].start <= 30


def test_a_paragraph_that_fills_a_chunk_stays_whole_without_overlap() -> None:
    # Overlap there would cut a complete paragraph in two; keeping it whole is worth more.
    text = "\n\n".join(
        f"Paragraph {i} speaks of the amber lantern and nothing else." for i in range(5)
    )
    chunks = chunk_text(text, ChunkPolicy(max_chars=60, overlap=10, min_chars=5))
    assert [c.text for c in chunks] == text.split("\n\n")


def test_overlap_resumes_after_a_paragraph_that_filled_a_chunk() -> None:
    big = sentences(7, 10)  # 198 chars: no room for overlap beside it in 200
    text = sentences(3) + "\n\n" + big + "\n\n" + sentences(3, 30) + "\n\n" + sentences(3, 40)
    chunks = chunk_text(text, ChunkPolicy(max_chars=200, overlap=60, min_chars=0))
    assert_exact(text, chunks, 200)
    assert chunks[1].text == big
    assert chunks[1].start > chunks[0].end  # the one boundary without overlap
    assert chunks[2].start < chunks[1].end  # the next chunk overlaps the big paragraph
    assert chunks[2].text.startswith("Sentence number")


def test_no_overlap_across_a_scene_break() -> None:
    text = chapter(6) + "\n\n***\n\n" + chapter(6)
    chunks = chunk_text(text, ChunkPolicy(max_chars=300, overlap=100, min_chars=0))
    brk = text.index("***")
    assert [c for c in chunks if c.start < brk < c.end] == []
    before = [c for c in chunks if c.end <= brk]
    after = [c for c in chunks if c.start > brk]
    assert before and after and after[0].start == brk + 5


# --- scene breaks -----------------------------------------------------------------------

BREAKS = ["***", "---", "___", "###", "* * *", "-----", "  ***  ", "\t- - -", "#####", "_ _ _ _"]


@pytest.mark.parametrize("mode", ["prose", MD])
@pytest.mark.parametrize("brk", BREAKS)
def test_scene_break_is_a_hard_boundary(mode: str, brk: str) -> None:
    a, b = sentences(2), sentences(2, 20)
    text = f"{a}\n{brk}\n{b}"
    chunks = chunk_text(text, ChunkPolicy(mode=mode, max_chars=400))
    assert [c.text for c in chunks] == [a, b]
    break_start = len(a) + 1
    for c in chunks:
        assert c.end <= break_start or c.start >= break_start + len(brk)


@pytest.mark.parametrize("line", ["**", "*-*", "--- text", "a ***", "#", "## x"])
def test_non_breaks_are_content(line: str) -> None:
    text = f"{sentences(2)}\n{line}\n{sentences(2, 20)}"
    chunks = chunk_text(text, ChunkPolicy(max_chars=400))
    assert [c.text for c in chunks] == [text]


def test_scene_break_at_document_edges_and_repeated() -> None:
    body = sentences(2)
    text = f"***\n{body}\n---\n\n___\n"
    assert [c.text for c in chunk_text(text)] == [body]
    assert chunk_text("***\n---\n") == []


# --- markdown ---------------------------------------------------------------------------


def md(text: str, **kwargs: int) -> list:
    policy = ChunkPolicy(mode=MD, **{"max_chars": 400, "overlap": 0, "min_chars": 0} | kwargs)
    chunks = chunk_text(text, policy)
    assert_exact(text, chunks, policy.max_chars)
    return chunks


def test_markdown_heading_path_nested() -> None:
    text = (
        "Preface text before any heading.\n\n"
        "# Top\nTop intro paragraph.\n\n"
        "## Sub one\nFirst sub body.\n\n"
        "### Deep\nDeep body text.\n\n"
        "## Sub two ##\nSecond sub body.\n\n"
        "# Other\nOther body text."
    )
    chunks = md(text)
    assert [(c.text.split("\n")[0], c.metadata["headings"]) for c in chunks] == [
        ("Preface text before any heading.", []),
        ("# Top", ["Top"]),
        ("## Sub one", ["Top", "Sub one"]),
        ("### Deep", ["Top", "Sub one", "Deep"]),
        ("## Sub two ##", ["Top", "Sub two"]),
        ("# Other", ["Other"]),
    ]


def test_markdown_heading_line_is_in_first_chunk_of_section() -> None:
    text = "## Methods\n\n" + sentences(30)
    chunks = md(text, max_chars=200, overlap=40, min_chars=20)
    assert chunks[0].text.startswith("## Methods\n\nSentence number 0")
    assert all(c.metadata == {"headings": ["Methods"]} for c in chunks)
    assert all(not c.text.startswith("##") for c in chunks[1:])


def test_markdown_hashes_alone_are_a_break_not_a_heading() -> None:
    a, b = "Alpha paragraph text.", "Beta paragraph text."
    chunks = md(f"# Title\n\n{a}\n###\n{b}\n### Real heading\n{a}")
    assert [c.text for c in chunks] == [f"# Title\n\n{a}", b, f"### Real heading\n{a}"]
    assert [c.metadata["headings"] for c in chunks] == [
        ["Title"],
        ["Title"],
        ["Title", "Real heading"],
    ]


@pytest.mark.parametrize("brk", ["---", "***", "___", "- - -"])
def test_markdown_thematic_breaks_split(brk: str) -> None:
    chunks = md(f"# T\nSome text here.\n{brk}\nMore text here.")
    assert [c.text for c in chunks] == ["# T\nSome text here.", "More text here."]
    assert [c.metadata["headings"] for c in chunks] == [["T"], ["T"]]


@pytest.mark.parametrize("fence", ["```", "~~~", "````"])
def test_markdown_code_fence_hides_headings_and_breaks(fence: str) -> None:
    code = f"{fence}python\n# not a heading\n\n---\n\nx = 1\n{fence}"
    text = f"# Real\nIntro line.\n\n{code}\n\nAfter code."
    chunks = md(text)
    assert [c.text for c in chunks] == [text]
    assert chunks[0].metadata["headings"] == ["Real"]


def test_markdown_code_fence_is_kept_whole_when_it_fits() -> None:
    code = "```\n" + "\n\n".join(f"line_{i} = {i}" for i in range(6)) + "\n```"
    text = sentences(5) + "\n\n" + code
    chunks = md(text, max_chars=len(code) + 10)
    assert code in [c.text for c in chunks]


def test_markdown_unclosed_fence_runs_to_end() -> None:
    text = "# A\nText.\n\n```\n# inside\n---\n"
    chunks = md(text)
    assert [c.metadata["headings"] for c in chunks] == [["A"]]
    assert chunks[0].text == text.strip()


def test_markdown_short_parent_heading_joins_its_subsection() -> None:
    text = "# Guide\n\n## Install\n\nRun the installer and follow the prompts."
    chunks = md(text, min_chars=20)
    assert [c.text for c in chunks] == [text]
    assert chunks[0].metadata["headings"] == ["Guide", "Install"]


def test_markdown_crlf_headings() -> None:
    text = "# Title\r\nBody text line.\r\n\r\n## Sub\r\nMore body text."
    chunks = md(text)
    assert [c.metadata["headings"] for c in chunks] == [["Title"], ["Title", "Sub"]]
    assert [c.text for c in chunks] == ["# Title\r\nBody text line.", "## Sub\r\nMore body text."]


def test_prose_mode_ignores_headings_and_has_no_metadata() -> None:
    text = "# Title\nBody.\n\n## Sub\nMore body here."
    (chunk,) = chunk_text(text)
    assert chunk.text == text and chunk.metadata == {}


def test_metadata_is_not_shared_between_chunks() -> None:
    chunks = md("# A\n" + sentences(30), max_chars=100)
    chunks[0].metadata["headings"].append("mutated")
    assert chunks[1].metadata["headings"] == ["A"]


# --- minimum size -----------------------------------------------------------------------


def test_fragments_below_min_chars_are_dropped() -> None:
    long_a, long_b = sentences(3), sentences(3, 10)
    text = f"{long_a}\n***\nTiny bit.\n***\n{long_b}"
    chunks = chunk_text(text, ChunkPolicy(max_chars=400, min_chars=20))
    assert [c.text for c in chunks] == [long_a, long_b]
    kept = chunk_text(text, ChunkPolicy(max_chars=400, min_chars=0))
    assert [c.text for c in kept] == [long_a, "Tiny bit.", long_b]


def test_document_of_only_fragments_is_not_lost() -> None:
    text = "Hello there.\n\n***\n\nGoodbye now."  # longer than min_chars in total
    assert [c.text for c in chunk_text(text)] == ["Hello there.", "Goodbye now."]


# --- unicode and line endings -----------------------------------------------------------


def test_unicode_combining_marks_and_emoji() -> None:
    word = "cafe\u0301 \U0001f44d\U0001f3fd na\u0308ive \U0001f469\u200d\U0001f4bb"
    text = " ".join([word] * 40)
    chunks = chunk_text(text, ChunkPolicy(max_chars=60, overlap=15, min_chars=0))
    assert_exact(text, chunks, 60)
    for c in chunks:
        assert c.text[0] not in "\u0301\u0308\u200d\U0001f3fd"
        assert c.text[-1] != "\u200d"


def test_hard_cut_keeps_combining_marks_with_their_base() -> None:
    text = "e\u0301" * 200  # one 400-code-point "word"
    chunks = chunk_text(text, ChunkPolicy(max_chars=51, overlap=0, min_chars=0))
    assert_exact(text, chunks, 51)
    assert "".join(c.text for c in chunks) == text
    assert all(c.text[0] == "e" for c in chunks)


def test_crlf_paragraphs_and_breaks() -> None:
    a, b, c = sentences(3), sentences(3, 10), sentences(3, 20)
    text = f"{a}\r\n\r\n{b}\r\n***\r\n{c}\r\n"
    chunks = chunk_text(text, ChunkPolicy(max_chars=len(a) + 5, overlap=0))
    assert [ch.text for ch in chunks] == [a, b, c]


def test_non_latin_text() -> None:
    text = "Привет мир. Это тест. " * 30
    chunks = chunk_text(text, ChunkPolicy(max_chars=100, overlap=20))
    assert_exact(text, chunks, 100)
    assert all(c.text.endswith(".") for c in chunks)
