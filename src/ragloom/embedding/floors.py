"""The dense-only floor: below which cosine a hit that only the dense leg found is noise.

The floor is a property of the embedding model: cosines of one model run higher than
another's (a floor of 0.45, chosen for such a model, dropped real matches at 0.40 with
all-MiniLM-L6-v2). Each floor here was measured with `bench/dense_floor.py` on the shared
collections: the highest floor that keeps at least 95% of the relevant dense-only hits.
A collection can carry its own (`"dense_floor"` in its stored embedding config); a search
can always pass an explicit one. A model measured by nobody gets no floor.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Model name (lower case) -> floor, each with its measurement (rerun bench/dense_floor.py).
KNOWN_FLOORS: dict[str, float] = {
    # bench/dense_floor.py on SciFact (test and train), Cranfield and CoSQA: 0.25 keeps every
    # relevant dense-only hit of the hybrid top 20 on all four (0.30 loses 1 of 10 on SciFact
    # test), while 0.45 lost half of them; cosines of code (CoSQA) run higher, prose sets the
    # floor. Measured with the int8 ONNX model; the float32 model's cosines differ by < 0.02.
    "all-minilm-l6-v2-int8": 0.25,
}
# Names under which the same model is served (Ollama calls MiniLM "all-minilm").
_SAME_MODEL: dict[str, str] = {
    name: "all-minilm-l6-v2-int8"
    for name in (
        "all-minilm-l6-v2",
        "sentence-transformers/all-minilm-l6-v2",
        "all-minilm",
        "all-minilm:l6-v2",
        "all-minilm:22m",
    )
}


def floor_for(model: object) -> float | None:
    """The measured floor of a model by name, or None when nobody measured it."""
    if not isinstance(model, str):
        return None
    name = model.strip().lower().removesuffix(":latest")
    return KNOWN_FLOORS.get(_SAME_MODEL.get(name, name))


def model_floor(embedder: Any) -> float | None:
    """An embedder's floor: the one it declares (`dense_floor`), else its model's measured
    one by name."""
    own = getattr(embedder, "dense_floor", None)
    if isinstance(own, (int, float)) and not isinstance(own, bool):
        return float(own)
    return floor_for(getattr(embedder, "name", None))


def dense_floor_of(embedding: Mapping[str, Any] | None) -> float | None:
    """A collection's floor: its own stored one, else its model's measured one."""
    if not embedding:
        return None
    own = embedding.get("dense_floor")
    if isinstance(own, (int, float)) and not isinstance(own, bool):
        return float(own)
    return floor_for(embedding.get("model"))
