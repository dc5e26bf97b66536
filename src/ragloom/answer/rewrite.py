"""A follow-up question made standalone: with a conversation, the model rewrites the last
question into a search query that needs no earlier turn ("and who forged it?" -> "who
forged the silver key"); when it fails, the question is searched as it is."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ragloom.contract.options import MAX_QUERY_CHARS
from ragloom.errors import InvalidRequest

PROMPT = """Rewrite the user's last question as one standalone search query that can be
understood without the conversation: resolve pronouns and references to earlier turns.
Reply with the query only, on one line, no quotes.

Conversation:
{conversation}

Last question: {question}"""
MAX_TURN_CHARS = 2000  # of each earlier turn, in the rewrite prompt
ROLES = ("user", "assistant")


def check_history(history: Any) -> list[dict[str, str]]:
    """The conversation as `[{"role", "content"}, ...]`, oldest first; `bad_request` on
    anything else."""
    if history is None:
        return []
    if not isinstance(history, Sequence) or isinstance(history, (str, bytes)):
        raise InvalidRequest("history must be a list of {role, content} turns")
    turns = []
    for n, turn in enumerate(history):
        if (
            not isinstance(turn, Mapping)
            or set(turn) != {"role", "content"}
            or turn["role"] not in ROLES
            or not isinstance(turn["content"], str)
        ):
            raise InvalidRequest(
                f'history[{n}] must be {{"role": "user" or "assistant", "content": text}}'
            )
        turns.append({"role": turn["role"], "content": turn["content"]})
    return turns


def prompt(question: str, history: Sequence[Mapping[str, str]]) -> list[dict[str, str]]:
    """The one message asking for the rewrite."""
    conversation = "\n".join(
        f"{turn['role']}: {' '.join(turn['content'].split())[:MAX_TURN_CHARS]}" for turn in history
    )
    text = PROMPT.format(conversation=conversation, question=question)
    return [{"role": "user", "content": text}]


def standalone(reply: str, question: str) -> str:
    """The query from the model's reply: its first non-empty line, unquoted; the question
    when the reply holds none (or one too long to be a query)."""
    for line in reply.splitlines():
        query = line.strip().strip("\"'`").strip()
        if query.lower().startswith("query:"):
            query = query[6:].strip()
        if query:
            return query if len(query) <= MAX_QUERY_CHARS else question
    return question
