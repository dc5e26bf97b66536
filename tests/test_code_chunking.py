"""Code chunking: declarations as chunks with symbols, kinds and lines, in every language."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragloom import Index
from ragloom.chunking import ChunkPolicy, chunk_text
from ragloom.chunking.code import CodeParseWarning, language_for
from ragloom.config import CollectionConfig
from ragloom.loading import discover_files, load_file

CODE = Path(__file__).parent / "data" / "code"

# (kind, symbol, start_line, end_line) of every chunk at the default code size.
OUTLINES = {
    "shapes.py": [
        ("module", None, 1, 6),
        ("function", "circle_area", 9, 12),
        ("class", "Shape", 15, 28),
        ("function", "fetch_größe", 31, 32),
        ("module", None, 35, 36),
    ],
    "Networking.swift": [
        ("module", None, 1, 3),
        ("class", "SafeFetcher", 5, 20),
        ("extension", "SafeFetcher", 22, 24),
        ("protocol", "Cache", 26, 28),
        ("enum", "Mode", 30, 30),
        ("actor", "Counter", 32, 35),
        ("function", "größe", 37, 37),
    ],
    "fetch.js": [
        ("module", None, 1, 3),
        ("function", "safeFetch", 5, 17),
        ("function", "parseJson", 19, 20),
        ("class", "Cache", 22, 35),
        ("function", "größe", 37, 39),
        ("module", None, 41, 41),
    ],
    "store.ts": [
        ("module", None, 1, 3),
        ("interface", "Entry", 5, 9),
        ("type", "Key", 11, 11),
        ("enum", "Color", 13, 16),
        ("class", "Store", 18, 30),
        ("function", "makeStore", 32, 34),
        ("namespace", "Util", 36, 40),
    ],
    "server.go": [
        ("module", None, 1, 9),
        ("struct", "Server", 11, 14),
        ("interface", "Handler", 16, 19),
        ("method", "Server.Start", 21, 24),
        ("function", "NewServer", 26, 29),
        ("function", "größe", 31, 31),
    ],
    "lib.rs": [
        ("module", None, 1, 5),
        ("struct", "Cache", 7, 11),
        ("impl", "Cache", 13, 22),
        ("trait", "Store", 24, 26),
        ("impl", "Cache", 28, 32),
        ("enum", "Mode", 34, 37),
        ("namespace", "inner", 39, 43),
        ("function", "größe", 45, 47),
    ],
    "Cache.java": [
        ("module", None, 1, 4),
        ("class", "Cache", 6, 27),
        ("interface", "Store", 29, 31),
        ("enum", "Mode", 33, 36),
    ],
    "buffer.c": [
        ("module", None, 1, 4),
        ("struct", "buffer", 6, 10),
        ("enum", "mode_t", 12, 12),
        ("module", None, 14, 14),
        ("function", "buffer_new", 16, 22),
        ("function", "buffer_append", 24, 34),
    ],
    "buffer.h": [
        ("module", None, 1, 9),
        ("function", "buffer_cap", 11, 13),
        ("module", None, 15, 15),
    ],
    "shapes.cpp": [
        ("module", None, 1, 2),
        ("namespace", "geo", 4, 29),
        ("module", None, 29, 29),
        ("function", "main", 31, 33),
    ],
}
LANGUAGE_OF = {
    "shapes.py": "python",
    "Networking.swift": "swift",
    "fetch.js": "javascript",
    "store.ts": "typescript",
    "server.go": "go",
    "lib.rs": "rust",
    "Cache.java": "java",
    "buffer.c": "c",
    "buffer.h": "c",
    "shapes.cpp": "cpp",
}
# With a small size, types are split into their members, named by qualified symbols.
SMALL_OUTLINES = {
    "Networking.swift": [
        ("module", None, 1, 3),
        ("class", "SafeFetcher", 5, 8),
        ("method", "SafeFetcher.safeFetch", 10, 12),
        ("method", "SafeFetcher.safeFetch", 13, 14),
        ("struct", "SafeFetcher.Config", 16, 19),
        ("extension", "SafeFetcher", 22, 24),
        ("protocol", "Cache", 26, 28),
        ("enum", "Mode", 30, 30),
        ("actor", "Counter", 32, 35),
        ("function", "größe", 37, 37),
    ],
    "fetch.js": [
        ("module", None, 1, 3),
        ("function", "safeFetch", 5, 8),
        ("function", "safeFetch", 9, 15),
        ("function", "safeFetch", 16, 17),
        ("function", "parseJson", 19, 20),
        ("class", "Cache", 22, 22),
        ("method", "Cache.constructor", 23, 25),
        ("method", "Cache.get", 27, 30),
        ("method", "Cache.create", 32, 34),
        ("function", "größe", 37, 39),
        ("module", None, 41, 41),
    ],
    "store.ts": [
        ("module", None, 1, 3),
        ("interface", "Entry", 5, 9),
        ("type", "Key", 11, 11),
        ("enum", "Color", 13, 16),
        ("class", "Store", 18, 20),
        ("method", "Store.put", 22, 25),
        ("method", "Store.size", 27, 29),
        ("function", "makeStore", 32, 34),
        ("namespace", "Util", 36, 40),
    ],
    "lib.rs": [
        ("module", None, 1, 5),
        ("struct", "Cache", 7, 11),
        ("impl", "Cache", 13, 13),
        ("method", "Cache.new", 14, 17),
        ("method", "Cache.safe_fetch", 19, 21),
        ("trait", "Store", 24, 26),
        ("impl", "Cache", 28, 32),
        ("enum", "Mode", 34, 37),
        ("namespace", "inner", 39, 43),
        ("function", "größe", 45, 47),
    ],
    "Cache.java": [
        ("module", None, 1, 4),
        ("class", "Cache", 6, 9),
        ("constructor", "Cache.Cache", 11, 12),
        ("method", "Cache.safeFetch", 14, 18),
        ("class", "Cache.Entry", 20, 26),
        ("interface", "Store", 29, 31),
        ("enum", "Mode", 33, 36),
    ],
    "buffer.c": [
        ("module", None, 1, 4),
        ("struct", "buffer", 6, 10),
        ("enum", "mode_t", 12, 12),
        ("module", None, 14, 14),
        ("function", "buffer_new", 16, 20),
        ("function", "buffer_new", 21, 22),
        ("function", "buffer_append", 24, 26),
        ("function", "buffer_append", 27, 34),
    ],
    "shapes.cpp": [
        ("module", None, 1, 2),
        ("namespace", "geo", 4, 6),
        ("class", "geo.Shape", 8, 10),
        ("method", "geo.Shape.~Shape", 11, 11),
        ("class", "geo.Shape", 12, 12),
        ("struct", "geo.Shape.Style", 14, 16),
        ("function", "geo.square", 19, 22),
        ("method", "geo.Circle.area", 24, 27),
        ("module", None, 29, 29),
        ("function", "main", 31, 33),
    ],
}


def code_policy(max_chars: int = 1500, overlap: int = 200) -> ChunkPolicy:
    return ChunkPolicy(mode="code", max_chars=max_chars, overlap=overlap, min_chars=0)


def chunks_of(text: str, source: str, max_chars: int = 1500, overlap: int = 200) -> list:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a fixture that does not parse is a failure here
        return chunk_text(text, code_policy(max_chars, overlap), source=source)


def outline(chunks: list) -> list[tuple]:
    return [
        (
            c.metadata["kind"],
            c.metadata.get("symbol"),
            c.metadata["start_line"],
            c.metadata["end_line"],
        )
        for c in chunks
    ]


def assert_exact(text: str, chunks: list, max_chars: int | None = None) -> None:
    """Offsets reproduce the text, spans are trimmed, lines match the offsets."""
    for c in chunks:
        assert text[c.start : c.end] == c.text
        assert c.text and c.text == c.text.strip()
        assert c.metadata["start_line"] == text.count("\n", 0, c.start) + 1
        assert c.metadata["end_line"] == text.count("\n", 0, c.end - 1) + 1
        if max_chars:
            assert len(c.text) <= max_chars


def assert_token_safe(text: str, chunks: list) -> None:
    """No chunk starts or ends inside a word (identifier, number, keyword)."""
    for c in chunks:
        assert c.start == 0 or not (text[c.start - 1].isalnum() and text[c.start].isalnum())
        assert c.end == len(text) or not (text[c.end - 1].isalnum() and text[c.end].isalnum())


def read(name: str) -> str:
    return (CODE / name).read_text(encoding="utf-8")


# --- every language, chunk by chunk -----------------------------------------------------


@pytest.mark.parametrize("name", sorted(OUTLINES))
def test_fixture_outline_at_default_size(name: str) -> None:
    text = read(name)
    chunks = chunks_of(text, name)
    assert outline(chunks) == OUTLINES[name]
    assert_exact(text, chunks, 1500)
    assert {c.metadata["language"] for c in chunks} == {LANGUAGE_OF[name]}


@pytest.mark.parametrize("name", sorted(SMALL_OUTLINES))
def test_small_size_splits_types_into_qualified_members(name: str) -> None:
    text = read(name)
    chunks = chunks_of(text, name, max_chars=150, overlap=0)
    assert outline(chunks) == SMALL_OUTLINES[name]
    assert_exact(text, chunks, 150)
    assert_token_safe(text, chunks)


@pytest.mark.parametrize("name", sorted(OUTLINES))
def test_every_word_of_the_file_is_in_some_chunk(name: str) -> None:
    text = read(name)
    for size in (1500, 150, 60):
        chunks = chunks_of(text, name, max_chars=size, overlap=0)
        covered = [False] * len(text)
        for c in chunks:
            covered[c.start : c.end] = [True] * (c.end - c.start)
        lost = [m.group() for m in re.finditer(r"\w+", text) if not covered[m.start()]]
        assert lost == [], (size, lost)
        assert [c.start for c in chunks] == sorted(c.start for c in chunks)
        assert_exact(text, chunks, size)


def first_chunks(name: str) -> dict[str | None, str]:
    """Text of the first chunk of each symbol in a fixture."""
    out: dict[str | None, str] = {}
    for c in chunks_of(read(name), name):
        out.setdefault(c.metadata.get("symbol"), c.text)
    return out


def test_declaration_chunks_carry_their_comments_and_attributes() -> None:
    swift = first_chunks("Networking.swift")
    assert swift["SafeFetcher"].startswith("/// Fetches data with retries.\n@MainActor\nfinal")
    rust = first_chunks("lib.rs")
    assert rust["Cache"].startswith("/// A cache of values.\n#[derive(Debug, Default)]\npub")
    py = first_chunks("shapes.py")
    assert py["circle_area"].startswith("# Area of a circle; the comment belongs")
    assert py["Shape"].startswith("@dataclass(frozen=True)\nclass Shape:")
    ts = first_chunks("store.ts")
    assert ts["Store"].startswith("@sealed\nexport class Store<T>")
    assert ts["Entry"].startswith("/** A key-value record. */\nexport interface Entry")
    java = first_chunks("Cache.java")
    assert java["Cache"].startswith('/** A simple cache. */\n@SuppressWarnings("unchecked")')
    go = first_chunks("server.go")
    assert go["Server.Start"].startswith("// Start runs the server.\nfunc (s *Server) Start()")
    c = first_chunks("buffer.c")
    assert c["buffer_new"].startswith("/* Create an empty buffer. */\nstruct buffer *buffer_new")


def test_comment_after_a_blank_line_stays_with_module_code() -> None:
    text = "import os\n\n# Section: helpers\n\ndef helper():\n    return os.sep\n"
    chunks = chunks_of(text, "m.py")
    assert [c.text for c in chunks] == [
        "import os\n\n# Section: helpers",
        "def helper():\n    return os.sep",
    ]


def test_python_nested_classes_are_qualified() -> None:
    text = read("shapes.py")
    chunks = chunks_of(text, "shapes.py", max_chars=60, overlap=0)
    symbols = [c.metadata.get("symbol") for c in chunks]
    assert "Shape.describe" in symbols and "Shape.Meta.ordering" in symbols
    kinds = {c.metadata.get("symbol"): c.metadata["kind"] for c in chunks}
    assert kinds["Shape.Meta"] == "class" and kinds["Shape.Meta.ordering"] == "method"
    assert_exact(text, chunks, 60)


def test_python_closures_are_functions_of_their_parent() -> None:
    inner = "\n".join(f"        total += {i}" for i in range(20))
    text = f"def outer():\n    def inner(total):\n{inner}\n        return total\n    return inner\n"
    chunks = chunks_of(text, "c.py", max_chars=200, overlap=0)
    assert ("function", "outer.inner") in {
        (c.metadata["kind"], c.metadata["symbol"]) for c in chunks
    }
    assert_exact(text, chunks, 200)


# --- very long functions: split at statements, never mid-token ---------------------------

LONG = {
    "python": (
        "py",
        "def long_fn(x):\n{body}\n    return total\n",
        "    total += compute({i})",
        "long_fn",
    ),
    "swift": (
        "swift",
        "func longFn() -> Int {{\n{body}\n    return total\n}}\n",
        "    total += compute({i})",
        "longFn",
    ),
    "javascript": (
        "js",
        "function longFn() {{\n{body}\n  return total;\n}}\n",
        "  total += compute({i});",
        "longFn",
    ),
    "typescript": (
        "ts",
        "function longFn(): number {{\n{body}\n  return total;\n}}\n",
        "  total += compute({i});",
        "longFn",
    ),
    "go": (
        "go",
        "package p\n\nfunc LongFn() int {{\n{body}\n\treturn total\n}}\n",
        "\ttotal += compute({i})",
        "LongFn",
    ),
    "rust": (
        "rs",
        "fn long_fn() -> i64 {{\n{body}\n    total\n}}\n",
        "    total += compute({i});",
        "long_fn",
    ),
    "java": (
        "java",
        "class Big {{\n  int longFn() {{\n{body}\n    return total;\n  }}\n}}\n",
        "    total += compute({i});",
        "Big.longFn",
    ),
    "c": (
        "c",
        "int long_fn(void) {{\n{body}\n    return total;\n}}\n",
        "    total += compute({i});",
        "long_fn",
    ),
    "cpp": (
        "cpp",
        "int long_fn() {{\n{body}\n    return total;\n}}\n",
        "    total += compute({i});",
        "long_fn",
    ),
}


@pytest.mark.parametrize("language", sorted(LONG))
def test_very_long_function_splits_at_statements(language: str) -> None:
    suffix, template, statement, symbol = LONG[language]
    body = "\n".join(statement.format(i=i) for i in range(200))
    text = template.format(body=body)
    chunks = chunks_of(text, f"long.{suffix}", max_chars=400, overlap=0)
    mine = [c for c in chunks if c.metadata.get("symbol") == symbol]
    assert len(mine) >= len(text) // 400
    assert_exact(text, chunks, 400)
    assert_token_safe(text, chunks)
    for c in mine:  # whole lines: each piece starts a line and ends one
        assert c.start == 0 or text[: c.start].rstrip(" \t").endswith("\n")
        assert c.end == len(text) or text[c.end] == "\n"
    found = [int(n) for c in chunks for n in re.findall(r"compute\((\d+)\)", c.text)]
    assert found == list(range(200))  # every statement once, in order


def test_single_huge_line_is_cut_between_tokens() -> None:
    text = "DATA = [" + ", ".join(str(i) for i in range(3000)) + "]\n"
    chunks = chunks_of(text, "data.py", max_chars=500, overlap=0)
    assert len(chunks) > 20
    assert_exact(text, chunks, 500)
    assert_token_safe(text, chunks)
    numbers = [int(n) for c in chunks for n in re.findall(r"\d+", c.text)]
    assert numbers == list(range(3000))


# --- unicode ------------------------------------------------------------------------------


def test_unicode_identifiers_and_astral_characters_keep_offsets() -> None:
    py = (
        'PARTY = "🎉🎉 fête"\n\n\n'
        'def größe_berechnen(ä: int) -> int:\n    """Größe 📏."""\n    return ä\n'
    )
    chunks = chunks_of(py, "u.py")
    assert outline(chunks) == [("module", None, 1, 1), ("function", "größe_berechnen", 4, 6)]
    assert_exact(py, chunks)
    swift = (
        'let party = "🎉🎉"\n\nfunc größe() -> String { "📏" }\n\nstruct Ärger { var 名前 = "x" }\n'
    )
    chunks = chunks_of(swift, "u.swift")
    assert outline(chunks) == [
        ("module", None, 1, 1),
        ("function", "größe", 3, 3),
        ("struct", "Ärger", 5, 5),
    ]
    assert_exact(swift, chunks)


def test_crlf_line_endings() -> None:
    text = "import os\r\n\r\n\r\ndef a():\r\n    return 1\r\n\r\n\r\nclass B:\r\n    x = 2\r\n"
    chunks = chunks_of(text, "w.py")
    assert outline(chunks) == [
        ("module", None, 1, 1),
        ("function", "a", 4, 5),
        ("class", "B", 8, 9),
    ]
    assert_exact(text, chunks)


# --- fallbacks ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "text"),
    [
        ("broken.py", "def broken(:\n    return 1\n\nx = 2\n"),
        ("broken.go", "package p\n\nfunc Broken( {\n\treturn\n}\n"),
        ("Broken.swift", "class Broken {\n    func f( -> Int {\n}\n"),
        ("broken.rs", "fn broken( {\n    1\n}\n"),
    ],
)
def test_unparsable_source_falls_back_to_lines_with_a_warning(source: str, text: str) -> None:
    with pytest.warns(CodeParseWarning, match=re.escape(source)):
        chunks = chunk_text(text, code_policy(), source=source)
    assert chunks and {c.metadata["kind"] for c in chunks} == {"lines"}
    assert all("symbol" not in c.metadata for c in chunks)
    assert chunks[0].metadata["language"] == language_for(source)
    assert_exact(text, chunks)


def test_line_windows_overlap_by_whole_lines() -> None:
    text = "\n".join(f"line {i:03d} of some unknown language" for i in range(60)) + "\n"
    chunks = chunk_text(text, code_policy(max_chars=300, overlap=80), source="x.kt")
    assert len(chunks) > 5
    assert_exact(text, chunks, 300)
    for before, after in zip(chunks, chunks[1:]):
        assert before.start < after.start < before.end  # overlapping, moving forward
        assert before.end - after.start <= 80
        assert text[after.start - 1] == "\n" and text[before.end] == "\n"
    assert chunks[-1].end == len(text) - 1
    assert all("language" not in c.metadata and c.metadata["kind"] == "lines" for c in chunks)


def test_header_that_is_cpp_parses_as_cpp() -> None:
    text = "#pragma once\n\nclass Widget {\npublic:\n    int size() const { return 1; }\n};\n"
    chunks = chunks_of(text, "widget.h")
    assert outline(chunks) == [("module", None, 1, 1), ("class", "Widget", 3, 6)]
    assert chunks[1].metadata["language"] == "cpp"


def test_missing_grammar_falls_back_with_a_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    from ragloom.chunking.code import treesitter

    def missing(name: str) -> None:
        raise treesitter.GrammarMissing("tree_sitter_go is not installed")

    monkeypatch.setattr(treesitter, "_language", missing)
    monkeypatch.setattr(treesitter._local, "parsers", {}, raising=False)
    with pytest.warns(CodeParseWarning, match=r"ragloom\[code\]"):
        chunks = chunk_text(read("server.go"), code_policy(), source="server.go")
    assert {c.metadata["kind"] for c in chunks} == {"lines"}


def test_whole_file_when_max_chars_is_zero() -> None:
    text = read("lib.rs")
    chunks = chunk_text(text, code_policy(max_chars=0, overlap=0), source="lib.rs")
    assert outline(chunks) == [("module", None, 1, 47)]
    assert chunks[0].text == text.strip()


def test_empty_source_gives_nothing() -> None:
    assert chunk_text("  \n\n", code_policy(), source="e.py") == []


# --- policy, config, loading, index ------------------------------------------------------


def test_policy_language_round_trips_and_is_validated() -> None:
    policy = ChunkPolicy(mode="code", max_chars=900, overlap=100, min_chars=0, language="go")
    assert ChunkPolicy.from_dict(policy.to_dict()) == policy
    assert "language" not in ChunkPolicy().to_dict()  # prose fingerprints are unchanged
    with pytest.raises(Exception, match="language"):
        ChunkPolicy(mode="prose", language="python")


def test_auto_mode_picks_code_for_code_suffixes() -> None:
    config = CollectionConfig()
    for source, language in (("a/b.py", "python"), ("x.TSX", "tsx"), ("m.hpp", "cpp")):
        policy = config.policy_for(source)
        assert (policy.mode, policy.language, policy.max_chars) == ("code", language, 1500)
    assert config.policy_for("notes.md").mode == "markdown"
    assert config.policy_for("notes.txt").mode == "prose"
    assert config.policy_for(None).mode == "prose"
    forced = CollectionConfig.from_dict(
        {"chunk_mode": "code", "code_chunking": {"language": "python"}}
    )
    assert forced.policy_for("corpus.jsonl").language == "python"
    assert forced.policy_for("x.go").language == "go"
    custom = CollectionConfig.from_dict({"code_chunking": {"max_chars": 800}})
    assert custom.policy_for("a.rs").max_chars == 800
    assert CollectionConfig.from_dict(custom.to_dict()) == custom


def test_discovery_finds_code_files_typed_by_language(tmp_path: Path) -> None:
    for name in OUTLINES:
        (tmp_path / name).write_text(read(name), encoding="utf-8")
    (tmp_path / "icon.png").write_bytes(b"\x89PNG\r\n\x1a\n")  # left out by the default rules
    found = [f for f in discover_files([tmp_path]) if not f.left_out]
    assert sorted(f.path.name for f in found) == sorted(OUTLINES)
    types = {f.path.name: load_file(f).documents[0].metadata["type"] for f in found}  # type: ignore[index]
    assert types == LANGUAGE_OF


def test_indexed_code_is_searchable_with_symbol_metadata(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    for name in ("Networking.swift", "lib.rs", "shapes.py"):
        (src / name).write_text(read(name), encoding="utf-8")
    with Index(tmp_path / "i.db") as index:
        report = index.index_path(src)
        assert report.documents == 3
        hit = index.search("circle area radius", top_k=1)[0]
        assert hit.document_id == "shapes.py"
        meta = hit.metadata
        assert (meta["language"], meta["kind"], meta["symbol"]) == (
            "python",
            "function",
            "circle_area",
        )
        assert (meta["start_line"], meta["end_line"], meta["type"]) == (9, 12, "python")
        assert index.document_text("shapes.py")[hit.start : hit.end] == hit.text


# --- properties ---------------------------------------------------------------------------

FRAGMENTS = [
    "import os\n",
    "X = 1\n",
    "# a comment\n",
    "\n",
    "def f(a, b):\n    return a + b\n",
    "@decorator\ndef g():\n    '''Doc.'''\n    for i in range(3):\n        print(i)\n",
    "class C:\n    y = 2\n\n    def m(self):\n        return self.y\n",
    "class D(C):\n    class E:\n        def n(self):\n            pass\n",
    "if X:\n    Z = [1, 2, 3]\nelse:\n    Z = []\n",
    "async def größe():\n    return '🎉'\n",
    "try:\n    import json\nexcept ImportError:\n    json = None\n",
]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=12),
    st.integers(min_value=20, max_value=400),
)
def test_generated_python_keeps_every_word(parts: list[str], max_chars: int) -> None:
    text = "".join(parts)
    chunks = chunks_of(text, "gen.py", max_chars=max_chars, overlap=0)
    assert_exact(text, chunks, max_chars)
    assert_token_safe(text, chunks)
    words = "".join(re.findall(r"\w+", text))
    assert "".join(w for c in chunks for w in re.findall(r"\w+", c.text)) == words


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.text(alphabet=st.sampled_from(list("ab_ {}()=;:\n\t\"'#/*.é🎉")), max_size=300),
    st.sampled_from(["x.py", "x.go", "x.swift", "x.rs", "x.cpp", "x.unknown"]),
    st.integers(min_value=8, max_value=120),
)
def test_arbitrary_text_never_breaks_offsets(text: str, source: str, max_chars: int) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CodeParseWarning)
        chunks = chunk_text(text, code_policy(max_chars, max_chars // 4), source=source)
    assert_exact(text, chunks, max_chars)
    covered = set()
    for c in chunks:
        covered.update(range(c.start, c.end))
    assert all(i in covered for i, ch in enumerate(text) if ch.isalnum())


def test_code_chunk_size_is_a_collection_setting(tmp_path: Path) -> None:
    body = "\n".join(f"    total += compute({i})" for i in range(60))
    (tmp_path / "long.py").write_text(f"def long_fn():\n{body}\n    return total\n", "utf-8")
    with Index(tmp_path / "i.db") as index:
        config = index.configure("code", code_chunking={"max_chars": 300})
        assert config.policy_for("long.py").max_chars == 300
        report = index.index_path(tmp_path / "long.py", collection="code")
        assert report.chunks == len(chunks_of(read_text(tmp_path / "long.py"), "long.py", 300))
        hits = index.search("compute total", top_k=20, collection="code")
        assert hits and all(len(h.text) <= 300 for h in hits)
        assert {h.metadata["symbol"] for h in hits} == {"long_fn"}


def read_text(path: Path) -> str:
    return path.read_text(encoding="utf-8")
