"""The served schema says what this server can do: a search step whose service it lacks
(an LLM for `hops` and `expand: "llm"`, a reranker for `rerank`) is taken out of the
request schemas, so that the schema allows no body the server would refuse for it."""

from __future__ import annotations

import os
from typing import Any

from ragloom.server.settings import ServerSettings

NO_LLM = " This server has no LLM (ragloom serve --llm): not offered."
NO_RERANKER = " This server has no reranker (ragloom serve --rerank): false only."


def _configured(spec: str | None, variable: str) -> bool:
    value = spec if spec is not None else os.environ.get(variable)
    return bool(value and value.strip() and value.strip() != "none")


def services(settings: ServerSettings) -> tuple[bool, bool]:
    """(has an LLM, has a reranker), from the settings or the environment as the index
    resolves them; an "llm" reranker needs the LLM too."""
    llm = _configured(settings.llm, "RAGLOOM_LLM")
    reranker = _configured(settings.reranker, "RAGLOOM_RERANKER")
    spec = settings.reranker or os.environ.get("RAGLOOM_RERANKER") or ""
    return llm, reranker and (llm or not spec.strip().startswith("llm"))


def narrow(schema: dict[str, Any], llm: bool, reranker: bool) -> None:
    """Take the steps the server cannot run out of every request model of `schema`."""
    for model in schema.get("components", {}).get("schemas", {}).values():
        properties = model.get("properties", {})
        if not llm and "hops" in properties:
            properties["hops"]["maximum"] = 1
            properties["hops"]["description"] += NO_LLM.replace("not offered", "1 only")
        if not llm and "expand" in properties:
            for choice in properties["expand"].get("anyOf", [properties["expand"]]):
                if "llm" in choice.get("enum", ()):
                    choice["enum"] = [v for v in choice["enum"] if v != "llm"]
            properties["expand"]["description"] += NO_LLM.replace("not offered", "no llm")
        if not reranker and "rerank" in properties:
            properties["rerank"]["enum"] = [False]
            properties["rerank"]["description"] += NO_RERANKER
