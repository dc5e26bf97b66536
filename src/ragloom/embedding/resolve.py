"""Choose an embedder from a short spec string or a collection's stored config."""

from __future__ import annotations

import os
from typing import Any

from ragloom.embedding.base import Embedder
from ragloom.errors import InputError

SPEC_HELP = "use none, auto, local, openai:MODEL@BASE_URL or ollama:MODEL@BASE_URL"
ENV_VAR = "RAGLOOM_EMBEDDER"


def check_spec(spec: str) -> None:
    """Fail early, without loading anything, on a spec `resolve_embedder` would refuse."""
    spec = spec.strip()
    if spec in ("auto", "none", "local"):
        return
    provider, _, rest = spec.partition(":")
    model, _, base_url = rest.partition("@")
    if not (provider in ("openai", "ollama") and model and base_url):
        raise InputError(f"unknown embedder {spec!r}", SPEC_HELP)


def resolve_embedder(spec: str | Embedder | None = "auto") -> Embedder | None:
    """`auto` (the default, or $RAGLOOM_EMBEDDER) is the local model when installed, else none."""
    if spec is None or isinstance(spec, Embedder):
        return spec
    if spec == "auto":
        spec = os.environ.get(ENV_VAR, "auto")
    spec = spec.strip()
    if spec == "none":
        return None
    if spec in ("auto", "local"):
        from ragloom.embedding.local import LocalEmbedder, local_model_available

        if spec == "auto" and not local_model_available():
            return None
        return LocalEmbedder()
    provider, _, rest = spec.partition(":")
    model, _, base_url = rest.partition("@")
    if provider in ("openai", "ollama") and model and base_url:
        return embedder_from_config({"provider": provider, "model": model, "base_url": base_url})
    raise InputError(f"unknown embedder {spec!r}", SPEC_HELP)


def embedder_from_config(config: dict[str, Any]) -> Embedder:
    """Rebuild the embedder a collection was indexed with (keys come from the environment)."""
    provider = config.get("provider")
    if provider == "local":
        from ragloom.embedding.local import LocalEmbedder

        return LocalEmbedder()
    if provider in ("openai", "ollama"):
        from ragloom.embedding.http import OllamaEmbedder, OpenAIEmbedder

        cls = OpenAIEmbedder if provider == "openai" else OllamaEmbedder
        return cls(config["base_url"], config["model"], dimension=config.get("dimension"))
    raise InputError(f"cannot rebuild embedder {config!r}", "pass an Embedder to Index(...)")
