"""Multi-hop retrieval (chain of retrieval): retrieve, ask the LLM whether the passages
suffice, retrieve its follow-up query, accumulate, repeat. The loop is the engine's
(`ragloom.engine.steps`, which retrieves); the LLM's decision and the trace are here.

Stops when the LLM says the passages suffice, at the hop limit, when a hop brings no new
chunk, when the LLM proposes no follow-up, when its reply cannot be parsed, or when it
fails (then the search is degraded, or raises if strict). Every hop is recorded: its
query, the ids of the chunks it added, and the LLM's decision.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ragloom.errors import LLMError
from ragloom.llm import LLM, extract_json
from ragloom.retrieval.pipeline import Candidate
from ragloom.timing import timed

MAX_PASSAGE_CHARS = 1200
PROMPT = """Question: {question}

Passages retrieved so far:
{passages}

Do these passages hold enough information to answer the question? If not, write one short
search query for the missing information (different from the queries already tried:
{tried}).
Reply with JSON only: {{"sufficient": true or false, "follow_up_query": "..."}}"""


@dataclass
class HopTrace:
    """What the loop did: one entry per hop and why it stopped."""

    hops: list[dict[str, Any]] = field(default_factory=list)
    stopped: str = ""
    reason: str | None = None  # set when the LLM failed (the search is then degraded)

    def to_dict(self) -> dict[str, Any]:
        return {"trace": self.hops, "stopped": self.stopped}


def parse_decision(reply: str) -> tuple[bool, str]:
    """(sufficient, follow-up query) from the LLM's JSON reply; ValueError if unusable."""
    data = extract_json(reply, (dict,))
    sufficient = data.get("sufficient")
    if isinstance(sufficient, str) and sufficient.strip().lower() in ("true", "false"):
        sufficient = sufficient.strip().lower() == "true"
    if not isinstance(sufficient, bool):
        raise ValueError(f"'sufficient' is not true or false in {reply[:120]!r}")
    follow_up = data.get("follow_up_query") or ""
    if not isinstance(follow_up, str):
        raise ValueError(f"'follow_up_query' is not text in {reply[:120]!r}")
    return sufficient, " ".join(follow_up.split())


def _passages(chunks: Sequence[Any]) -> str:
    parts = []
    for number, chunk in enumerate(chunks, start=1):
        text = (
            chunk.text if len(chunk.text) <= MAX_PASSAGE_CHARS else chunk.text[:MAX_PASSAGE_CHARS]
        )
        title = f" ({chunk.title})" if getattr(chunk, "title", None) else ""
        parts.append(f"[{number}]{title} {text.strip()}")
    return "\n\n".join(parts) or "(none)"


def follow_up(
    llm: LLM,
    question: str,
    passages: Sequence[Any],
    tried: Sequence[str],
    strict: bool,
    trace: HopTrace,
) -> str | None:
    """Ask `llm` whether the `passages` found so far answer the `question`: its follow-up
    query, or None when the loop ends there (`trace.stopped` says why: sufficient, no
    follow-up, an unparseable reply, or the LLM failed, then with `trace.reason`; `strict`
    raises the failure instead). The decision is kept on the trace's last hop."""
    prompt = PROMPT.format(
        question=question,
        passages=_passages(passages),
        tried="; ".join(f'"{q}"' for q in tried),
    )
    try:
        with timed("hops"):
            reply = llm.chat([{"role": "user", "content": prompt}], max_tokens=120)
    except LLMError as exc:
        if strict:
            raise
        trace.stopped, trace.reason = "llm_failed", f"{exc.code}: {exc.message}"
        return None
    try:
        sufficient, query = parse_decision(reply)
    except ValueError:
        trace.stopped = "unparseable"
        return None
    trace.hops[-1]["decision"] = {"sufficient": sufficient, "follow_up_query": query}
    if sufficient:
        trace.stopped = "sufficient"
        return None
    if not query or query.lower() in (q.lower() for q in tried):
        trace.stopped = "no_follow_up"
        return None
    return query


def new_in_hop(hits: Sequence[Candidate], found: dict[int, Candidate], hop: int) -> list[Candidate]:
    """The hits of round `hop` not found before, marked with it (and added to `found`)."""
    new = [replace(c, hop=hop) for c in hits if c.row_id not in found]
    found.update((c.row_id, c) for c in new)
    return new
