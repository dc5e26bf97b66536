"""The passages an answer was given, numbered once: those of the context block first, then
whatever the model's tool calls brought, numbered on from them (a passage seen twice keeps
its first number), so every `[n]` the model writes names one passage."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ragloom.context import Passage, count_tokens

_PLACE = ("source", "title", "place", "page", "pages", "section")  # None when unknown
_CITED = ("document_id", "collection", "start", "end", *_PLACE)


class Sources:
    """Passages by number (1, 2, ...), each a dict: number, collection, document_id, source,
    title, start, end, chunk_ids, tokens, truncated, place, page, pages, section, text,
    found_by."""

    def __init__(self, passages: Iterable[Passage] = ()) -> None:
        self.passages: list[dict[str, Any]] = []
        self._numbers: dict[tuple[str, str, int, int], int] = {}
        for passage in passages:
            self.add_passage(passage, "context")

    def add_passage(self, passage: Passage, found_by: str) -> int:
        """`add` of a passage of `ragloom.context` (its tokens counted if it was not packed)."""
        data = passage.to_dict()
        data.pop("number")
        data.pop("label", None)
        data["tokens"] = passage.tokens or count_tokens(passage.text)
        return self.add(**data, text=passage.text, found_by=found_by)

    def add(self, **passage: Any) -> int:
        """The passage's number: its first one if it was given before, else the next."""
        key = (passage["collection"], passage["document_id"], passage["start"], passage["end"])
        if key not in self._numbers:
            number = len(self.passages) + 1
            self._numbers[key] = number
            passage.setdefault("truncated", False)
            for name in _PLACE:
                passage.setdefault(name, None)
            if "tokens" not in passage:
                passage["tokens"] = count_tokens(passage["text"])
            self.passages.append({"number": number, **passage})
        return self._numbers[key]

    def valid(self, number: int) -> bool:
        """A passage of this number was given."""
        return 1 <= number <= len(self.passages)

    def citation(self, number: int) -> dict[str, Any]:
        """What a `[n]` marker cites: the passage's document, span and place."""
        passage = self.passages[number - 1]
        chunk_ids = passage.get("chunk_ids") or []
        cited = {"n": number, "chunk_id": chunk_ids[0] if chunk_ids else None}
        cited.update({name: passage.get(name) for name in _CITED})
        cited["chunk_ids"] = chunk_ids
        return cited
