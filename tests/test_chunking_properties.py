"""Hypothesis property tests: chunking invariants hold for arbitrary text and valid policies."""

from __future__ import annotations

import re
from unittest import mock

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ragloom.chunking import MODES, ChunkPolicy, chunk_text, markdown, sections
from ragloom.chunking.chunker import split_document
from ragloom.chunking.prose import sentence_bounds
from ragloom.types import ChunkSpan

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Break-like lines are never in a chunk; heading-like lines (markdown) start a new section.
_BREAK_LIKE = re.compile(r"[^\S\n]*([*\-_#])(?:[^\S\n]*\1){2,}[^\S\n]*")
_HEADING_LIKE = re.compile(r" {0,3}#{1,6}(?:[^\S\n].*)?")
_NON_SPACE = re.compile(r"\S")
_CJK_STOPS = "\u3002\uff01\uff1f\u300d\u300f\u201d\u2019\uff09)"

ATOMS = [
    "word",
    "Alpha",
    "be",
    "zz" * 12,
    "caf\u00e9",
    "e\u0301",
    "\U0001f44d\U0001f3fd",
    "\U0001f469\u200d\U0001f4bb",
    "\u6f22\u5b57\u3002",
    "\u041f\u0440\u0438\u0432\u0435\u0442",
    " ",
    "  ",
    "\t",
    "\u00a0",
    "\n",
    "\n\n",
    "\n \n",
    "\r\n",
    ". ",
    "! ",
    "? ",
    "\u2026 ",
    '." ',
    "e.g. ",
    "\n***\n",
    "\n* * *\n",
    "\n---\n",
    "\n___\n",
    "\n###\n",
    "\n  -----  \n",
    "\n# Title\n",
    "\n## Sub section\n",
    "\n### Deep ###\n",
    "\n```\n",
    "\n~~~\n",
    "\n# comment\n",
]

structured_text = st.lists(st.sampled_from(ATOMS), max_size=120).map("".join)
any_text = st.one_of(structured_text, st.text(max_size=400))


@st.composite
def policies(draw: st.DrawFn) -> ChunkPolicy:
    """Random valid policies, biased towards small sizes that force lots of splitting."""
    mode = draw(st.sampled_from(MODES))
    max_chars = draw(st.one_of(st.just(0), st.integers(1, 40), st.integers(41, 300)))
    if max_chars == 0:
        return ChunkPolicy(mode, 0, draw(st.integers(0, 100)), draw(st.integers(0, 50)))
    overlap = draw(st.integers(0, max_chars - 1))
    min_chars = draw(st.integers(0, 60))
    return ChunkPolicy(mode, max_chars, overlap, min_chars)


def _indent(text: str, pos: int) -> str:
    """The horizontal whitespace immediately before pos on its line."""
    line_start = text.rfind("\n", 0, pos) + 1
    before = text[line_start:pos]
    return before if not before.strip() else ""


def _line_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of every line, split on "\\n" only (the chunker's notion of a line)."""
    spans, start = [], 0
    for line in text.split("\n"):
        spans.append((start, start + len(line)))
        start += len(line) + 1
    return spans


def _uncovered_runs(text: str, covered: list[bool]) -> list[tuple[int, int]]:
    """Uncovered (start, end) runs of the text, cut at break-like lines."""
    runs: list[tuple[int, int]] = []
    run_start = -1

    def flush(at: int) -> None:
        nonlocal run_start
        if run_start >= 0:
            runs.append((run_start, at))
            run_start = -1

    for start, end in _line_spans(text):
        line = text[start:end]
        if _BREAK_LIKE.fullmatch(line):
            flush(start)
            continue
        for i in range(start, min(end + 1, len(text))):
            if covered[i]:
                flush(i)
            elif run_start < 0:
                run_start = i
    flush(len(text))
    return runs


def _explained_by_dropped_pieces(
    chars: list[int], free: set[int], min_chars: int, max_chars: int
) -> bool:
    """Whether the non-space characters at these offsets split into droppable pieces.

    Dropped fragments are pieces shorter than min_chars; two of them only stay side by side
    when joining them would exceed max_chars (otherwise the chunker merges them) or when a
    section boundary (a heading: index in `free`) separates them.
    """
    n = len(chars)
    # ends_at[i] = the j such that chars[j:i] can be the last piece of a valid split.
    ends_at: list[list[int]] = [[] for _ in range(n + 1)]
    for i in range(1, n + 1):
        for j in range(i - 1, -1, -1):
            if chars[i - 1] + 1 - chars[j] >= min_chars:
                break
            if (
                j == 0
                or j in free
                or any(chars[i - 1] + 1 - chars[k] > max_chars for k in ends_at[j])
            ):
                ends_at[i].append(j)
    return n == 0 or bool(ends_at[n])


def check_invariants(text: str, policy: ChunkPolicy, chunks: list[ChunkSpan]) -> None:
    """Rules 5, 6, 8, ordering and overlap bound."""
    if not text.strip():
        assert chunks == []
        return
    if any(line.strip() and not _BREAK_LIKE.fullmatch(line) for line in text.split("\n")):
        assert chunks, "a document with content must yield at least one chunk"
    for c in chunks:
        assert text[c.start : c.end] == c.text  # rule 5: exact offsets
        assert c.text and c.text == c.text.strip()  # rule 5: trimmed
        if policy.max_chars:
            assert len(c.text) <= policy.max_chars  # rule 6
        if policy.mode == "markdown":
            assert isinstance(c.metadata.get("headings"), list)
    for a, b in zip(chunks, chunks[1:]):
        assert a.start < b.start and a.end < b.end  # document order
        assert a.end - b.start <= policy.overlap  # bounded overlap
    if policy.max_chars == 0:
        assert len(chunks) == 1 and chunks[0].text == text.strip()
        return
    # Rule 8: every uncovered non-space character is on a break line or in a short fragment.
    covered = [False] * len(text)
    for c in chunks:
        covered[c.start : c.end] = [True] * (c.end - c.start)
    min_chars = policy.min_chars if len(text.strip()) >= policy.min_chars else 0
    heading_starts = {
        start
        for start, end in _line_spans(text)
        if policy.mode == "markdown" and _HEADING_LIKE.fullmatch(text[start:end])
    }
    for start, end in _uncovered_runs(text, covered):
        chars = [start + m.start() for m in _NON_SPACE.finditer(text[start:end])]
        free = {i for i, a in enumerate(chars) if a - len(_indent(text, a)) in heading_starts}
        assert _explained_by_dropped_pieces(chars, free, min_chars, policy.max_chars), (
            f"lost content: {text[start:end]!r}"
        )


def check_word_boundaries(text: str, chunks: list[ChunkSpan]) -> None:
    """When no word exceeds the limit, chunks start and end on word boundaries."""
    for c in chunks:
        before = text[c.start - 1] if c.start else " "
        after = text[c.end] if c.end < len(text) else " "
        assert before.isspace() or before in _CJK_STOPS, (c, before)
        assert after.isspace() or text[c.end - 1] in _CJK_STOPS, (c, after)


@SETTINGS
@given(structured_text, policies())
def test_invariants_on_structured_text(text: str, policy: ChunkPolicy) -> None:
    check_invariants(text, policy, chunk_text(text, policy))


@SETTINGS
@given(st.text(max_size=400), policies())
def test_invariants_on_arbitrary_text(text: str, policy: ChunkPolicy) -> None:
    check_invariants(text, policy, chunk_text(text, policy))


@SETTINGS
@given(any_text, policies())
@example(". be. . ", ChunkPolicy("code", 3, 0, 0))  # a cut line's next piece began at a space
def test_never_cuts_inside_a_word_that_fits(text: str, policy: ChunkPolicy) -> None:
    chunks = chunk_text(text, policy)
    if policy.max_chars and all(len(w) <= policy.max_chars for w in text.split()):
        check_word_boundaries(text, chunks)


@SETTINGS
@given(any_text, policies())
def test_chunking_is_deterministic_and_policy_round_trips(text: str, policy: ChunkPolicy) -> None:
    again = ChunkPolicy.from_dict(policy.to_dict())
    assert again == policy
    assert chunk_text(text, again) == chunk_text(text, policy)


@SETTINGS
@given(
    st.lists(
        st.sampled_from(["Some words here.", "More text", "x" * 50, " ", "\n\n"]), max_size=60
    ),
    st.integers(2, 60),
)
def test_overlap_up_to_max_minus_one_terminates(parts: list[str], max_chars: int) -> None:
    text = "".join(parts)
    policy = ChunkPolicy("prose", max_chars, max_chars - 1, 0)
    chunks = chunk_text(text, policy)
    check_invariants(text, policy, chunks)
    if text.strip():
        assert chunks[-1].end == len(text.rstrip())


# --- overlap at every boundary -------------------------------------------------------------

FLOW_WORDS = ["word", "Alpha", "be", "Mira", "rang", "a"]
FLOW_GAPS = [" ", " ", " ", "\n", "\n\n", "\n \n", ". ", "! ", ".\n\n", "  "]
flowing_text = st.lists(
    st.tuples(st.sampled_from(FLOW_WORDS), st.sampled_from(FLOW_GAPS)), max_size=80
).map(lambda pairs: "".join(word + gap for word, gap in pairs))
_PARAGRAPH_START = re.compile(r"\n[^\S\n]*\n\s*(?=\S)")
_PARAGRAPH_GAP = re.compile(r"\n(?:[^\S\n]*\n)+")


def _preferred_starts(text: str) -> set[int]:
    """Offsets where a sentence or a paragraph begins (the best places for an overlap)."""
    _, starts = sentence_bounds(text, 0, len(text))
    return set(starts) | {m.end() for m in _PARAGRAPH_START.finditer(text)}


@st.composite
def overlapping_policies(draw: st.DrawFn) -> ChunkPolicy:
    """Prose policies with a real overlap window and room for every word beside it."""
    max_chars = draw(st.integers(20, 200))
    overlap = draw(st.integers(6, max_chars - 12))  # words are at most 5 chars + a space
    return ChunkPolicy("prose", max_chars, overlap, 0)


def _paragraph_end(text: str, start: int) -> int:
    """End (trimmed) of the paragraph that begins at `start`."""
    gap = _PARAGRAPH_GAP.search(text, start)
    return len(text[: gap.start() if gap else len(text)].rstrip())


@SETTINGS
@given(flowing_text, overlapping_policies())
def test_every_boundary_overlaps_at_a_word_or_sentence_edge(text: str, policy: ChunkPolicy) -> None:
    """Consecutive chunks share text whenever the window before the boundary holds a word
    start, except before a paragraph that no overlap would leave whole; the next chunk
    begins at a sentence or paragraph start when one lies in the shared part."""
    chunks = chunk_text(text, policy)
    check_invariants(text, policy, chunks)
    check_word_boundaries(text, chunks)
    preferred = _preferred_starts(text)
    for a, b in zip(chunks, chunks[1:]):
        low = max(a.end - policy.overlap, a.start + 1)
        words = [i for i in range(low, a.end) if text[i - 1].isspace() and not text[i].isspace()]
        if words and b.start >= a.end:  # no overlap: only to keep a paragraph whole
            assert b.start in preferred, (a, b)
            assert _paragraph_end(text, b.start) - words[-1] > policy.max_chars, (a, b)
        if b.start < a.end and any(b.start < i < a.end for i in preferred):
            assert b.start in preferred, (a, b)


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(alphabet=st.sampled_from("ab .\n\t*-#é"), max_size=200),
    max_chars=st.integers(min_value=5, max_value=250),
    min_chars=st.integers(min_value=0, max_value=60),
)
@example(text="a\n---", max_chars=5, min_chars=0)  # a scene break: no shortcut, cut there
def test_short_prose_shortcut_gives_what_the_general_path_gives(
    text: str, max_chars: int, min_chars: int
):
    """A prose document that fits in one chunk skips sections and paragraphs; with the
    shortcut switched off the general path must find the very same spans."""
    policy = ChunkPolicy(max_chars=max_chars, overlap=0, min_chars=min(min_chars, max_chars))
    fast = split_document(text, policy)
    # The shortcut is taken only without a scene break: an empty break at 0 (no boundary)
    # switches it off; a text's real breaks are kept, as they cut the general path's sections.
    real = sections.scene_breaks
    with mock.patch.object(sections, "scene_breaks", lambda text: real(text) or [(0, 0)]):
        general = split_document(text, policy)
    assert fast == general


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet=st.sampled_from("*-_# \t\nab\u00a0"), max_size=40))
def test_scene_breaks_of_one_line_match_the_general_scan(text: str):
    """One-line texts skip the line scan; the result must be what the scan finds."""
    pattern = markdown._BREAK_AFTER_NEWLINE
    scanned = [(m.start(), m.end() - 1) for m in pattern.finditer("\n" + text)]
    assert markdown.scene_breaks(text) == scanned
