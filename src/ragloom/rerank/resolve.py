"""Choose a reranker from a spec: `onnx:FOLDER`, `rerank:MODEL@URL` (also `cohere:`, `jina:`,
`vllm:`, `infinity:`), `tei:MODEL@URL`, `llm` / `llm:pointwise` / `llm:listwise`."""

from __future__ import annotations

import os
from typing import Any

from ragloom.errors import InputError
from ragloom.llm import LLM
from ragloom.remote import TIMEOUT_OPTIONS, parse_service_spec
from ragloom.rerank.base import Reranker

ENV_VAR = "RAGLOOM_RERANKER"
V1_PROVIDERS = ("rerank", "cohere", "jina", "vllm", "infinity")
SPEC_HELP = (
    "use onnx:FOLDER, rerank:MODEL@URL (cohere:, jina:, vllm:, infinity: alike), "
    "tei:MODEL@URL, llm, llm:pointwise or llm:listwise"
)


def resolve_reranker(spec: str | Reranker | None, llm: LLM | None = None) -> Reranker | None:
    """A reranker from a spec or object (None: $RAGLOOM_RERANKER, else no reranker).

    `llm` serves the `llm` specs. Nothing is loaded or called beyond the model file for onnx.
    """
    if spec is not None and not isinstance(spec, str):
        if not isinstance(spec, Reranker):
            raise InputError(f"rerank must be a spec or an object with score(), got {spec!r}")
        return spec
    spec = (spec if spec is not None else os.environ.get(ENV_VAR, "")).strip()
    if not spec or spec == "none":
        return None
    kind, _, rest = spec.partition(":")
    if kind == "onnx":
        if not rest:
            raise InputError("onnx: needs the folder of the cross-encoder", SPEC_HELP)
        from ragloom.rerank.onnx import CrossEncoder

        folder, _, query = rest.partition("?")
        options = dict(part.partition("=")[::2] for part in query.split("&") if part)
        return CrossEncoder(os.path.expanduser(folder), **_onnx_options(options))
    if kind == "llm":
        if llm is None:
            raise InputError(f"reranker {spec!r} needs an LLM", "set one with --llm or RAGLOOM_LLM")
        from ragloom.rerank.llm import LLMReranker

        return LLMReranker(llm, rest or "listwise")
    if kind in V1_PROVIDERS or kind == "tei":
        from ragloom.rerank.http import DEFAULT_TIMEOUTS, CohereReranker, TEIReranker

        parsed = parse_service_spec(spec, (*V1_PROVIDERS, "tei"), SPEC_HELP)
        unknown = set(parsed.options) - set(TIMEOUT_OPTIONS)
        if unknown:
            raise InputError(f"unknown rerank option(s): {', '.join(sorted(unknown))}", SPEC_HELP)
        timeouts = DEFAULT_TIMEOUTS.with_options(parsed.options)
        cls = TEIReranker if kind == "tei" else CohereReranker
        return cls(parsed.base_url, parsed.model, timeouts=timeouts)
    raise InputError(f"unknown reranker {spec!r}", SPEC_HELP)


def _onnx_options(options: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in options.items():
        if key not in ("max_length", "batch_size", "threads"):
            raise InputError(f"unknown cross-encoder option {key!r}", "use max_length, batch_size")
        try:
            out[key] = int(value)
        except ValueError:
            raise InputError(f"{key}={value!r} is not an integer") from None
    return out
