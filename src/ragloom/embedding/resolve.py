"""Choose an embedder from a short spec string or a collection's stored config."""

from __future__ import annotations

import os
from typing import Any

from ragloom.embedding.base import Embedder
from ragloom.errors import InputError, worded
from ragloom.remote import TIMEOUT_OPTIONS, Timeouts, parse_service_spec

SPEC_HELP = (
    "use none, auto, local, local:float32, openai:MODEL@BASE_URL or ollama:MODEL@BASE_URL "
    "(options after ?, e.g. ?timeout=30&query_timeout=2)"
)
ENV_VAR = "RAGLOOM_EMBEDDER"
LOCAL_SPECS = {"local": "int8", "local:int8": "int8", "local:float32": "float32"}
PROVIDERS = ("openai", "ollama")


def check_spec(spec: str) -> None:
    """Fail early, without loading anything, on a spec `resolve_embedder` would refuse."""
    spec = spec.strip()
    if spec in ("auto", "none") or spec in LOCAL_SPECS:
        return
    service = parse_service_spec(spec, PROVIDERS, SPEC_HELP)
    unknown = sorted(set(service.options) - set(TIMEOUT_OPTIONS))
    if unknown:
        raise InputError(f"unknown option {unknown[0]!r} in {spec!r}", SPEC_HELP)
    Timeouts().with_options(service.options)  # the values are numbers of seconds


def resolve_embedder(spec: str | Embedder | None = "auto") -> Embedder | None:
    """`auto` (the default, or $RAGLOOM_EMBEDDER) is the local model when installed, else none."""
    if spec is None or isinstance(spec, Embedder):
        return spec
    if spec == "auto":
        spec = os.environ.get(ENV_VAR, "auto")
    spec = spec.strip()
    if spec == "none":
        return None
    if spec == "auto" or spec in LOCAL_SPECS:
        from ragloom.embedding.local import LocalEmbedder, local_model_available

        if spec == "auto" and not local_model_available():
            return None
        return LocalEmbedder(precision=LOCAL_SPECS.get(spec, "int8"))
    service = parse_service_spec(spec, PROVIDERS, SPEC_HELP)
    return embedder_from_config(
        {
            "provider": service.provider,
            "model": service.model,
            "base_url": service.base_url,
            "options": service.options,
        }
    )


def embedder_from_config(config: dict[str, Any]) -> Embedder:
    """Rebuild the embedder a collection was indexed with (keys come from the environment);
    nothing is loaded from or sent to a service here."""
    provider = config.get("provider")
    if provider == "local":
        from ragloom.embedding.local import LocalEmbedder

        return LocalEmbedder(precision=config.get("precision", "int8"))
    if provider in PROVIDERS:
        from ragloom.embedding.http import OllamaEmbedder, OpenAIEmbedder

        cls = OpenAIEmbedder if provider == "openai" else OllamaEmbedder
        return cls(
            config["base_url"],
            config["model"],
            dimension=config.get("dimension"),
            options=config.get("options"),
        )
    raise InputError(
        f"cannot rebuild embedder {config!r}: its vectors came from an Embedder given to the "
        "library",
        hints=worded("pass that Embedder to Index(...), or search with {lexical}"),
    )
