"""Multi-query expansion with an LLM: the original query plus a few rephrasings.

The reply is read robustly: JSON in code fences or inside prose, `{"queries": [...]}` or a
bare list, or failing JSON a numbered / bulleted list of lines. Variants are cleaned,
de-duplicated (ignoring case and spacing), the original always comes first, and at most
`max_variants` are kept. A reply with no usable variant raises ValueError (the caller then
falls back to the original query, flagged).
"""

from __future__ import annotations

import re
from typing import Any

from ragloom.llm import LLM, extract_json

MAX_VARIANT_CHARS = 500
PROMPT = """Write {count} different search queries that would find passages answering the
question below: rephrase it, use synonyms and related technical terms, split compound
questions. Keep each query short and self-contained.
Reply with JSON only: {{"queries": ["...", "..."]}}

Question: {query}"""

_LIST_ITEM = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)])\s+(.+?)\s*$")


def _key(text: str) -> str:
    return " ".join(text.lower().split())


def _items(reply: str) -> list[Any]:
    try:
        data = extract_json(reply, (dict, list))
    except ValueError:
        return [m.group(1) for line in reply.splitlines() if (m := _LIST_ITEM.match(line))]
    if isinstance(data, dict):
        for key in ("queries", "variants", "rewrites", "questions"):
            if isinstance(data.get(key), list):
                return data[key]
        lists = [v for v in data.values() if isinstance(v, list)]
        return lists[0] if len(lists) == 1 else []
    return data


def parse_variants(reply: str, query: str, max_variants: int = 5) -> list[str]:
    """[query, variant, ...] from an LLM reply (at most `max_variants` in all)."""
    variants = [query]
    seen = {_key(query)}
    for item in _items(reply):
        if isinstance(item, dict):  # {"query": "..."} objects
            item = item.get("query") or item.get("text")
        if not isinstance(item, str):
            continue
        text = item.strip().strip('"').strip()
        if not text or len(text) > MAX_VARIANT_CHARS or _key(text) in seen:
            continue
        seen.add(_key(text))
        variants.append(text)
        if len(variants) >= max_variants:
            break
    if len(variants) == 1:
        raise ValueError(f"no usable query variant in the reply: {reply[:120]!r}")
    return variants


def expand_query(llm: LLM, query: str, max_variants: int = 5) -> list[str]:
    """Ask `llm` for rephrasings of `query`: [query, up to max_variants - 1 variants].

    Raises the LLM's typed error when the service fails, ValueError on an unusable reply.
    """
    count = max(1, max_variants - 1)
    prompt = PROMPT.format(count=count, query=query)
    reply = llm.chat([{"role": "user", "content": prompt}], max_tokens=60 * count + 40)
    return parse_variants(reply, query, max_variants)
