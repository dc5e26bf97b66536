"""An LLM as reranker: pointwise (a 0-10 grade per passage) or listwise (one ranking).

Pointwise asks about each passage on its own (requests run a few at a time) and scores
grade / 10. Listwise shows every passage numbered and asks for the numbers best first;
passages the reply leaves out keep their order after the ranked ones, and position p of n
scores (n - p) / n. An unusable reply raises `RerankFailed` (the stage then keeps the fused
order, flagged), a failing service `LLMFailed` / `LLMOffline`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ragloom.errors import InputError, RerankFailed
from ragloom.llm import LLM, extract_json

METHODS = ("pointwise", "listwise")
MAX_PASSAGE_CHARS = 1200  # what a passage shows the LLM (prompts stay bounded)

POINTWISE_PROMPT = """Rate how well the passage answers the query.
Reply with JSON only: {{"score": N}} where N is 0 (unrelated) to 10 (answers it fully).

Query: {query}

Passage:
{passage}"""

LISTWISE_PROMPT = """Rank the {count} passages below by how well they answer the query.
Reply with JSON only: {{"ranking": [numbers of the passages, most relevant first]}}.

Query: {query}

{passages}"""


def _clip(text: str, limit: int = MAX_PASSAGE_CHARS) -> str:
    return text if len(text) <= limit else text[:limit].rstrip() + " ..."


def parse_grade(reply: str) -> float:
    """A 0-10 grade from `{"score": N}` or a reply that is just a number -> N / 10."""
    try:
        value: Any = extract_json(reply, (dict,)).get("score")
    except ValueError:
        match = re.fullmatch(r"\s*(-?\d+(?:\.\d+)?)\s*(?:/\s*10)?\s*\.?\s*", reply or "")
        value = float(match.group(1)) if match else None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 10:
        raise RerankFailed(f"the LLM reranker gave no 0-10 grade: {reply[:80]!r}")
    return float(value) / 10.0


def parse_ranking(reply: str, count: int) -> list[int]:
    """Passage numbers (1-based) best first -> 0-based order of all `count` passages."""
    try:
        data = extract_json(reply, (dict, list))
    except ValueError:
        raise RerankFailed(f"the LLM reranker gave no ranking: {reply[:80]!r}") from None
    items = data.get("ranking") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise RerankFailed(f"the LLM reranker gave no ranking list: {reply[:80]!r}")
    order: list[int] = []
    for item in items:
        text = str(item).strip().strip("[]")
        if text.isdigit() and 1 <= int(text) <= count and int(text) - 1 not in order:
            order.append(int(text) - 1)
    if not order:
        raise RerankFailed(f"the LLM reranker's ranking names no passage: {reply[:80]!r}")
    return order + [i for i in range(count) if i not in order]


class LLMReranker:
    """Rerank with `llm` (an `ragloom.llm.LLM`), `method` "pointwise" or "listwise"."""

    def __init__(self, llm: LLM, method: str = "listwise", concurrency: int = 4) -> None:
        if method not in METHODS:
            raise InputError(f"unknown LLM rerank method {method!r}", "use pointwise or listwise")
        self.llm, self.method = llm, method
        self.concurrency = max(1, concurrency)
        self.name = f"llm-{method}:{getattr(llm, 'name', 'llm')}"

    def score(self, query: str, documents: Sequence[str]) -> list[float]:
        if not documents:
            return []
        if self.method == "listwise":
            return self._listwise(query, documents)
        with ThreadPoolExecutor(min(self.concurrency, len(documents))) as pool:
            return list(pool.map(lambda doc: self._grade(query, doc), documents))

    def _grade(self, query: str, document: str) -> float:
        prompt = POINTWISE_PROMPT.format(query=query, passage=_clip(document))
        return parse_grade(self.llm.chat([{"role": "user", "content": prompt}], max_tokens=20))

    def _listwise(self, query: str, documents: Sequence[str]) -> list[float]:
        passages = "\n\n".join(f"[{i}] {_clip(doc)}" for i, doc in enumerate(documents, 1))
        prompt = LISTWISE_PROMPT.format(count=len(documents), query=query, passages=passages)
        reply = self.llm.chat([{"role": "user", "content": prompt}], max_tokens=400)
        order = parse_ranking(reply, len(documents))
        scores = [0.0] * len(documents)
        for position, index in enumerate(order):
            scores[index] = (len(documents) - position) / len(documents)
        return scores
