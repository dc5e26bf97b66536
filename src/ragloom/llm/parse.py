"""Reading JSON out of an LLM's reply: code fences, prose around it, trailing commentary."""

from __future__ import annotations

import json
import re
from typing import Any

_FENCE = re.compile(r"```[A-Za-z0-9_-]*\s*\n?(.*?)```", re.DOTALL)
_DECODER = json.JSONDecoder()


def extract_json(reply: str, kinds: tuple[type, ...] = (dict, list)) -> Any:
    """The first JSON value of one of `kinds` in `reply` (fenced blocks first); ValueError
    if there is none.

    Models wrap JSON in ```json fences, add a sentence before or after it, or answer with
    a bare value: each is accepted. A citation such as "[2]" in prose is skipped when only
    objects are wanted. Scalars count only when they are the whole reply.
    """
    if not isinstance(reply, str):
        raise ValueError("the reply is not text")
    blocks = [m.group(1) for m in _FENCE.finditer(reply)] + [reply]
    for block in blocks:
        text = block.strip()
        for start, char in enumerate(text):
            if char not in "{[":
                continue
            try:
                value, _ = _DECODER.raw_decode(text, start)
            except ValueError:
                continue
            if isinstance(value, kinds):
                return value
    try:
        value = json.loads(reply.strip())
    except ValueError:
        value = None
    if value is not None and isinstance(value, kinds):
        return value
    raise ValueError(f"no JSON {'/'.join(k.__name__ for k in kinds)} in the reply: {reply[:120]!r}")
