"""Build all-MiniLM-L6-v2 as an ONNX graph from numpy weights, in float32 or int8.

The graph takes one text's token ids (`input_ids`, shape [1, T], no padding) and returns
its mean-pooled embedding ([1, 384], not normalised). One text per run means no padding and
no mask, and a text's vector never depends on what else is being embedded.

The int8 graph quantizes each linear layer's input with one scale per token row (symmetric,
`act_levels` levels each side of zero, stored as uint8 around a fixed zero point), multiplies
with int8 weights that have one scale per output channel (`MatMulInteger`), and rescales.
With `act_levels=64` the uint8 values stay in [0, 128], so any two adjacent u8*s8 products
sum to at most 2*128*127 = 32512: the 16-bit pair sums of AVX2's `vpmaddubsw` cannot
saturate, and AVX2, AVX-512/VNNI and ARM compute the same integers exactly.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from ragloom.embedding.minilm_weights import (
    HEADS,
    HIDDEN,
    LAYER_NORM_EPS,
    LAYERS,
    Weights,
    quantize_per_channel,
)

OPSET = 17
INPUT = "input_ids"
OUTPUT = "embedding"


class _Builder:
    """Accumulates nodes and initializers; each helper returns its output's name."""

    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self._count = 0

    def name(self, hint: str) -> str:
        self._count += 1
        return f"{hint}_{self._count}"

    def const(self, value: np.ndarray | np.generic, hint: str = "c") -> str:
        name = self.name(hint)
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def op(self, op_type: str, inputs: list[str], hint: str | None = None, **attrs: Any) -> str:
        out = self.name(hint or op_type.lower())
        self.nodes.append(helper.make_node(op_type, inputs, [out], **attrs))
        return out


def _weight(weights: Weights, names: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """The float32 weight `[in, out]` and bias of one or more linear layers side by side
    (query, key and value share one product)."""
    weight = np.concatenate([weights.tensors[n + ".weight"] for n in names], axis=0).T
    bias = np.concatenate([weights.tensors[n + ".bias"] for n in names])
    return np.ascontiguousarray(weight, np.float32), bias.astype(np.float32)


def _int8_weight(weights: Weights, names: list[str], levels: int) -> tuple[np.ndarray, np.ndarray]:
    """int8 values `[in, out]` and per-output-channel scales: the shipped ones when the
    weights came as int8, else quantized here."""
    parts = [
        weights.int8[n]
        if levels == 127 and n in weights.int8
        else quantize_per_channel(weights.tensors[n + ".weight"], levels)
        for n in names
    ]
    values = np.concatenate([v for v, _ in parts], axis=1)
    return np.ascontiguousarray(values), np.concatenate([s for _, s in parts])


def _linear_fp32(b: _Builder, x: str, weights: Weights, names: list[str]) -> str:
    weight, bias = _weight(weights, names)
    return b.op("Add", [b.op("MatMul", [x, b.const(weight, "w")]), b.const(bias, "b")])


def _linear_int8(
    b: _Builder, x: str, weights: Weights, names: list[str], act_levels: int, weight_levels: int
) -> str:
    values, scale = _int8_weight(weights, names, weight_levels)
    _, bias = _weight(weights, names)
    # One scale per token row: max |x| of the row maps to act_levels.
    row_max = b.op("ReduceMax", [b.op("Abs", [x])], axes=[0, 2], keepdims=0)
    row_scale = b.op(
        "Mul",
        [b.op("Max", [row_max, b.const(np.float32(1e-12))]), b.const(np.float32(1 / act_levels))],
    )
    zero_point = b.op("Expand", [b.const(np.uint8(act_levels)), b.op("Shape", [row_scale])])
    quantized = b.op("QuantizeLinear", [x, row_scale, zero_point], axis=1)
    product = b.op(
        "MatMulIntegerToFloat",
        [
            quantized,
            b.const(values, "q"),
            b.const(np.float32(1.0)),
            b.const(scale, "s"),
            b.const(np.uint8(act_levels)),
        ],
        domain="com.microsoft",
    )
    rescaled = b.op(
        "Mul", [product, b.op("Unsqueeze", [row_scale, b.const(np.array([1], np.int64))])]
    )
    return b.op("Add", [rescaled, b.const(bias, "b")])


def _layer_norm(b: _Builder, x: str, weights: Weights, prefix: str) -> str:
    return b.op(
        "LayerNormalization",
        [
            x,
            b.const(weights.tensors[prefix + ".weight"]),
            b.const(weights.tensors[prefix + ".bias"]),
        ],
        axis=-1,
        epsilon=LAYER_NORM_EPS,
    )


def build_graph(
    weights: Weights, int8: bool = False, act_levels: int = 64, weight_levels: int = 127
) -> onnx.ModelProto:
    """The model as an ONNX graph: float32 products, or int8 products (see module doc)."""
    b = _Builder()

    def linear(x: str, *names: str) -> str:
        if int8:
            return _linear_int8(b, x, weights, list(names), act_levels, weight_levels)
        return _linear_fp32(b, x, weights, list(names))

    t = weights.tensors
    length = b.op("Gather", [b.op("Shape", [INPUT]), b.const(np.int64(1))], axis=0)
    positions = b.op("Range", [b.const(np.int64(0)), length, b.const(np.int64(1))])
    x = b.op("Gather", [b.const(t["embeddings.word_embeddings.weight"]), INPUT], axis=0)
    x = b.op(
        "Add",
        [
            x,
            b.op(
                "Gather", [b.const(t["embeddings.position_embeddings.weight"]), positions], axis=0
            ),
        ],
    )
    x = b.op("Add", [x, b.const(t["embeddings.token_type_embeddings.weight"][0])])
    x = _layer_norm(b, x, weights, "embeddings.LayerNorm")
    for n in range(LAYERS):
        p = f"encoder.layer.{n}."
        qkv = linear(x, *(p + f"attention.self.{part}" for part in ("query", "key", "value")))
        q, k, v = (b.name("qkv") for _ in range(3))
        b.nodes.append(helper.make_node("Split", [qkv], [q, k, v], axis=-1))
        context = b.op("MultiHeadAttention", [q, k, v], num_heads=HEADS, domain="com.microsoft")
        attended = linear(context, p + "attention.output.dense")
        x = _layer_norm(b, b.op("Add", [attended, x]), weights, p + "attention.output.LayerNorm")
        hidden = linear(x, p + "intermediate.dense")
        erf = b.op("Erf", [b.op("Div", [hidden, b.const(np.float32(math.sqrt(2.0)))])])
        gelu = b.op(
            "Mul",
            [
                b.op("Mul", [hidden, b.const(np.float32(0.5))]),
                b.op("Add", [erf, b.const(np.float32(1.0))]),
            ],
        )
        out = linear(gelu, p + "output.dense")
        x = _layer_norm(b, b.op("Add", [out, x]), weights, p + "output.LayerNorm")
    b.nodes.append(helper.make_node("ReduceMean", [x], [OUTPUT], axes=[1], keepdims=0))
    graph = helper.make_graph(
        b.nodes,
        "all-MiniLM-L6-v2-" + ("int8" if int8 else "fp32"),
        [helper.make_tensor_value_info(INPUT, TensorProto.INT64, [1, "tokens"])],
        [helper.make_tensor_value_info(OUTPUT, TensorProto.FLOAT, [1, HIDDEN])],
        b.inits,
    )
    return helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET), helper.make_opsetid("com.microsoft", 1)],
    )
