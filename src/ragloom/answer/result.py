"""What `ask` returns: the answer, its checked citations, the passages it was given, and
how it came about (abstained, degraded and why, tool rounds, timings)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class AskResult:
    """One answer. `answer` is the text as streamed (invalid citations taken out);
    `citations` map each valid `[n]` to its passage, `invalid_citations` list the numbers
    that named no passage given. `abstained`: the material does not cover the question
    (the floor said so, without a model call, or the model did). `degraded`: the answer is
    missing or partial (`reason` says why); the passages are there either way."""

    question: str
    query: str  # what was searched (the question, or its standalone rewrite)
    answer: str = ""
    citations: list[dict[str, Any]] = field(default_factory=list)
    invalid_citations: list[int] = field(default_factory=list)
    passages: list[dict[str, Any]] = field(default_factory=list)
    abstained: bool = False
    degraded: bool = False
    reason: str | None = None
    rounds: int = 0
    coverage: dict[str, Any] = field(default_factory=dict)
    model: str | None = None
    timings: dict[str, float] = field(default_factory=dict)
    prompt: list[dict[str, Any]] | None = None  # the messages sent, when asked for
    rewrite: dict[str, Any] | None = None  # the follow-up's rewrite, with history

    def to_dict(self) -> dict[str, Any]:
        out = {
            "question": self.question,
            "query": self.query,
            "answer": self.answer,
            "citations": self.citations,
            "invalid_citations": self.invalid_citations,
            "passages": self.passages,
            "abstained": self.abstained,
            "degraded": self.degraded,
            "reason": self.reason,
            "rounds": self.rounds,
            "coverage": self.coverage,
            "model": self.model,
            "timings": self.timings,
        }
        if self.rewrite is not None:
            out["rewrite"] = self.rewrite
        if self.prompt is not None:
            out["prompt"] = self.prompt
        return out

    def degrade(self, reason: str) -> None:
        """Mark the answer degraded, adding `reason` to any earlier one."""
        self.degraded = True
        self.reason = f"{self.reason}; {reason}" if self.reason else reason
