"""The tools an answer's model may call to search again: `search` and `get_document` of
`ragloom.tools`, whose results are numbered on from the passages already given (and added
to them), so that a citation of a tool result is checked like any other."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragloom.answer.sources import Sources
from ragloom.context import passage_of
from ragloom.tools import SCHEMAS, Toolbox

OFFERED = ("search", "get_document")


class AnswerToolbox(Toolbox):
    """`search` and `get_document` over `index`, every result numbered in `sources`."""

    def __init__(self, index: Any, sources: Sources, **defaults: Any) -> None:
        super().__init__(index, **defaults)
        self.sources = sources
        self.schemas = [s for s in SCHEMAS if s["function"]["name"] in OFFERED]

    def call(self, name: str, arguments: str | Mapping[str, Any] | None) -> dict[str, Any]:
        if name not in OFFERED:
            message = f"tool {name!r} is not offered here: use {', '.join(OFFERED)}"
            return {"ok": False, "error": {"code": "bad_request", "message": message}}
        return super().call(name, arguments)

    def result(self, rank: int, hit: Any) -> dict[str, Any]:
        passage = passage_of(0, [hit], None, hit.start, hit.end, hit.text)
        number = self.sources.add_passage(passage, "search")
        return {"number": number, **super().result(rank, hit)}

    def get_document(
        self,
        document_id: str,
        collection: str | None = None,
        start: int | None = None,
        end: int | None = None,
    ) -> dict[str, Any]:
        found = super().get_document(document_id, collection, start, end)
        number = self.sources.add(
            collection=found["collection"],
            document_id=document_id,
            chunk_ids=[],
            start=found["start"],
            end=found["end"],
            text=found["text"],
            found_by="get_document",
        )
        return {"number": number, **found}
