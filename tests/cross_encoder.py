"""A tiny cross-encoder built in the tests (no package ships real weights): a WordLevel
`tokenizer.json` and an ONNX graph with fixed weights, plus the same model in numpy.

The graph embeds tokens (word + position + segment), mean-pools the query segment and the
passage segment separately under the attention mask, and scores sum(q * p * w) + b: a
passage sharing the query's words scores higher. Its position table has exactly
`max_positions` rows, so an input longer than that fails inside ONNX Runtime.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

WORDS = [
    "the",
    "a",
    "of",
    "and",
    "to",
    "in",
    "is",
    "silver",
    "key",
    "mira",
    "forged",
    "door",
    "castle",
    "river",
    "dragon",
    "sword",
    "king",
    "queen",
    "map",
    "north",
    "south",
    "gold",
    "ship",
    "storm",
    "tower",
    "garden",
    "night",
    "moon",
    "sun",
    "fire",
    "water",
    "stone",
]
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]
DIM = 8


def weights(max_positions: int, seed: int = 7) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    vocab = len(SPECIAL) + len(WORDS)
    return {
        "E": rng.normal(size=(vocab, DIM)).astype(np.float32),
        "P": (0.1 * rng.normal(size=(max_positions, DIM))).astype(np.float32),
        "T": (0.1 * rng.normal(size=(2, DIM))).astype(np.float32),
        "w": rng.uniform(0.5, 1.5, size=(DIM,)).astype(np.float32),
        "b": np.array([-0.5], np.float32),
    }


def write_tokenizer(path: Path) -> None:
    from tokenizers import Tokenizer, normalizers, pre_tokenizers, processors
    from tokenizers.models import WordLevel

    vocab = {token: i for i, token in enumerate(SPECIAL + WORDS)}
    tokenizer = Tokenizer(WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", 2), ("[SEP]", 3)],
    )
    tokenizer.save(str(path))


def write_graph(path: Path, w: dict[str, np.ndarray]) -> None:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    def const(name: str, value: np.ndarray) -> onnx.TensorProto:
        return numpy_helper.from_array(value, name)

    nodes = [
        helper.make_node("Gather", ["E", "input_ids"], ["word"]),
        helper.make_node("Gather", ["T", "token_type_ids"], ["segment"]),
        helper.make_node("Shape", ["input_ids"], ["shape"]),
        helper.make_node("Gather", ["shape", "one"], ["length"], axis=0),
        helper.make_node("Range", ["zero", "length", "one"], ["positions"]),
        helper.make_node("Gather", ["P", "positions"], ["position"]),
        helper.make_node("Add", ["word", "segment"], ["ws"]),
        helper.make_node("Add", ["ws", "position"], ["emb"]),
        helper.make_node("Cast", ["attention_mask"], ["maskf"], to=TensorProto.FLOAT),
        helper.make_node("Cast", ["token_type_ids"], ["typef"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["maskf", "typef"], ["m1"]),
        helper.make_node("Sub", ["maskf", "m1"], ["m0"]),
    ]
    for seg in ("0", "1"):
        nodes += [
            helper.make_node("Unsqueeze", [f"m{seg}", "axis2"], [f"m{seg}e"]),
            helper.make_node("Mul", ["emb", f"m{seg}e"], [f"x{seg}"]),
            helper.make_node("ReduceSum", [f"x{seg}", "axis1"], [f"s{seg}"], keepdims=0),
            helper.make_node("ReduceSum", [f"m{seg}", "axis1"], [f"n{seg}"], keepdims=1),
            helper.make_node("Div", [f"s{seg}", f"n{seg}"], [f"pool{seg}"]),
        ]
    nodes += [
        helper.make_node("Mul", ["pool0", "pool1"], ["prod"]),
        helper.make_node("Mul", ["prod", "w"], ["weighted"]),
        helper.make_node("ReduceSum", ["weighted", "axis1"], ["dot"], keepdims=1),
        helper.make_node("Add", ["dot", "b"], ["logits"]),
    ]
    ints = [
        helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "sequence"])
        for name in ("input_ids", "attention_mask", "token_type_ids")
    ]
    graph = helper.make_graph(
        nodes,
        "tiny-cross-encoder",
        ints,
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1])],
        [const(k, v) for k, v in w.items()]
        + [
            const("zero", np.array(0, np.int64)),
            const("one", np.array(1, np.int64)),
            const("axis1", np.array([1], np.int64)),
            const("axis2", np.array([2], np.int64)),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))


def build(folder: Path, max_positions: int = 16, max_length: int | None = None) -> dict:
    """Write a cross-encoder folder; returns its weights for `reference_logit`."""
    folder.mkdir(parents=True, exist_ok=True)
    w = weights(max_positions)
    write_tokenizer(folder / "tokenizer.json")
    write_graph(folder / "model.onnx", w)
    config = {"model_type": "bert", "max_position_embeddings": max_positions}
    (folder / "config.json").write_text(json.dumps(config))
    if max_length is not None:
        (folder / "tokenizer_config.json").write_text(json.dumps({"model_max_length": max_length}))
    return w


def reference_logit(w: dict, ids: list[int], types: list[int]) -> float:
    """The graph's computation in numpy for one unpadded pair."""
    ids_a, types_a = np.asarray(ids), np.asarray(types)
    emb = w["E"][ids_a] + w["T"][types_a] + w["P"][np.arange(len(ids_a))]
    pool0 = emb[types_a == 0].mean(axis=0)
    pool1 = emb[types_a == 1].mean(axis=0)
    return float((pool0 * pool1 * w["w"]).sum() + w["b"][0])
