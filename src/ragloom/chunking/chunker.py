"""`chunk_text`: document text in, exact-offset chunk spans out (pure, no I/O).

A document is cut by one splitter, chosen by its policy's mode: code along its declarations
(`ragloom.chunking.code`), anything else section by section (`ragloom.chunking.sections`).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ragloom.chunking.code import chunk_code, language_for
from ragloom.chunking.policy import ChunkPolicy
from ragloom.chunking.sections import split_sections
from ragloom.types import ChunkSpan, Structure

DEFAULT_POLICY = ChunkPolicy()


class Chunked(NamedTuple):
    """A document's chunk spans, and how many fragments min_chars dropped from it."""

    spans: list[ChunkSpan]
    fragments: int = 0


def chunk_text(
    text: str, policy: ChunkPolicy = DEFAULT_POLICY, source: str | None = None
) -> list[ChunkSpan]:
    """Cut a document into trimmed, bounded, ordered spans for indexing.

    `source` (a path or file name) names the file in warnings and, in code mode, gives
    the language when the policy does not.
    """
    return split_document(text, policy, source).spans


def split_document(
    text: str,
    policy: ChunkPolicy = DEFAULT_POLICY,
    source: str | None = None,
    title: str | None = None,
    structure: Structure | None = None,
) -> Chunked:
    """`chunk_text` plus the count of dropped fragments; a titled document never vanishes.

    A document with a title but no chunk of its own (an empty or blank body) becomes one
    empty chunk at offset 0, so that its title (indexed with every chunk) is searchable.
    A converted document's `structure` (pages, sections...) shapes and places its chunks,
    except in code mode.
    """
    if policy.mode == "code":
        language = policy.language or language_for(source)
        chunked = Chunked(chunk_code(text, language, policy.max_chars, policy.overlap, source))
    else:
        chunked = Chunked(*split_sections(text, policy, structure))
    if not chunked.spans and title is not None and title.strip():
        metadata: dict[str, Any] = {"headings": []} if policy.mode == "markdown" else {}
        return Chunked([ChunkSpan("", 0, 0, metadata)], chunked.fragments)
    return chunked
