"""Which language a source file is in, from its suffix."""

from __future__ import annotations

SUFFIX_LANGUAGES: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".pyw": "python",
    ".swift": "swift",
    ".js": "javascript",
    ".jsx": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".c++": "cpp",
    ".hpp": "cpp",
    ".hh": "cpp",
    ".hxx": "cpp",
    ".h++": "cpp",
    ".ipp": "cpp",
    ".inl": "cpp",
}
CODE_SUFFIXES = tuple(SUFFIX_LANGUAGES)
LANGUAGES = tuple(sorted(set(SUFFIX_LANGUAGES.values())))


# Other names callers use for a language (a record's "language" field, for example).
ALIASES: dict[str, str] = {
    "py": "python",
    "js": "javascript",
    "jsx": "javascript",
    "node": "javascript",
    "ts": "typescript",
    "golang": "go",
    "rs": "rust",
    "c++": "cpp",
    "cxx": "cpp",
}


def language_named(name: object) -> str | None:
    """The code language a name such as "swift", "Python" or "c++" means (None: not code)."""
    if not isinstance(name, str):
        return None
    key = name.strip().lower()
    return key if key in LANGUAGES else ALIASES.get(key)


def language_for(source: str | None) -> str | None:
    """The language of a file path or name by its suffix (None: not a known code file)."""
    if not source:
        return None
    name = source.replace("\\", "/").rsplit("/", 1)[-1].lower()
    dot = name.rfind(".")
    return SUFFIX_LANGUAGES.get(name[dot:]) if dot > 0 else None
