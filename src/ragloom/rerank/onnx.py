"""A cross-encoder run by ONNX Runtime from a folder: an ONNX export plus `tokenizer.json`.

Exports of ms-marco-MiniLM, bge-reranker and the like ship as `model.onnx` (or
`onnx/model.onnx`) next to `tokenizer.json` and `config.json`. Each (query, passage) pair is
tokenized together, truncated to the model's maximum length, batched by length (padding to
the batch's longest only) and scored; one logit becomes a sigmoid probability, two logits a
softmax over the second class, so scores lie in [0, 1] and keep the model's order.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ragloom.errors import InputError, ModelUnavailable, RerankFailed

DEFAULT_MAX_LENGTH = 512
INSTALL_HINT = "install ONNX Runtime with `pip install 'ragloom[dense]'`"


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _model_file(folder: Path) -> Path:
    for candidate in (folder / "model.onnx", folder / "onnx" / "model.onnx"):
        if candidate.is_file():
            return candidate
    found = sorted(folder.glob("*.onnx")) + sorted(folder.glob("onnx/*.onnx"))
    if len(found) == 1:
        return found[0]
    raise InputError(
        f"no single ONNX model in {folder} (found {len(found)})",
        "put the export at model.onnx or onnx/model.onnx",
    )


def model_max_length(folder: Path, requested: int | None = None) -> int:
    """The pair length to truncate to: `requested`, else the tokenizer's configured maximum,
    else 512, never more than the model's position embeddings allow."""
    config = _read_json(folder / "config.json")
    limit = config.get("max_position_embeddings")
    if isinstance(limit, int) and config.get("model_type") in ("roberta", "xlm-roberta"):
        limit -= 2  # positions start after the padding index
    length = requested
    if length is None:
        configured = _read_json(folder / "tokenizer_config.json").get("model_max_length")
        length = configured if isinstance(configured, int) and configured < 100_000 else None
    length = length or DEFAULT_MAX_LENGTH
    if isinstance(limit, int) and limit > 0:
        length = min(length, limit)
    if length < 4:
        raise InputError(f"max_length must be at least 4, got {length}")
    return length


def _to_probability(logits: np.ndarray) -> np.ndarray:
    logits = np.asarray(logits, np.float64)
    if logits.ndim == 1 or (logits.ndim == 2 and logits.shape[1] == 1):
        return 1.0 / (1.0 + np.exp(-logits.reshape(-1)))
    if logits.ndim == 2 and logits.shape[1] == 2:
        shifted = np.exp(logits - logits.max(axis=1, keepdims=True))
        return shifted[:, 1] / shifted.sum(axis=1)
    raise RerankFailed(f"the cross-encoder returned logits of shape {logits.shape}")


class CrossEncoder:
    """A cross-encoder reranker from `folder`; `max_length` caps the tokens of each pair."""

    def __init__(
        self,
        folder: str | Path,
        max_length: int | None = None,
        batch_size: int = 16,
        threads: int | None = None,
    ) -> None:
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise ModelUnavailable(f"cannot run a cross-encoder ({exc})", INSTALL_HINT) from None
        self.folder = Path(folder)
        if not self.folder.is_dir():
            raise InputError(f"cross-encoder folder {self.folder} does not exist")
        if not (self.folder / "tokenizer.json").is_file():
            raise InputError(f"{self.folder} has no tokenizer.json")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InputError(f"batch_size must be a positive integer, got {batch_size!r}")
        self.name = f"onnx:{self.folder.name}"
        self.max_length = model_max_length(self.folder, max_length)
        self.batch_size = batch_size
        self._tokenizer = Tokenizer.from_file(str(self.folder / "tokenizer.json"))
        self._tokenizer.enable_truncation(self.max_length, strategy="longest_first")
        self._tokenizer.no_padding()
        padding = _read_json(self.folder / "tokenizer.json").get("padding") or {}
        self._pad_id = int(padding.get("pad_id", 0)) if isinstance(padding, dict) else 0
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or min(os.cpu_count() or 1, 4)
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        try:
            self._session = ort.InferenceSession(
                str(_model_file(self.folder)), options, providers=["CPUExecutionProvider"]
            )
        except InputError:
            raise
        except Exception as exc:  # onnxruntime raises its own exception types
            raise InputError(f"cannot load the cross-encoder in {self.folder}: {exc}") from None
        self._inputs = {i.name for i in self._session.get_inputs()}
        if "input_ids" not in self._inputs:
            raise InputError(f"{self.folder}: the ONNX graph has no input_ids input")

    def score(self, query: str, documents: Sequence[str]) -> list[float]:
        """Relevance in [0, 1] of each document to `query`, in the documents' order."""
        if not documents:
            return []
        encodings = self._tokenizer.encode_batch([(query, doc) for doc in documents])
        order = sorted(range(len(encodings)), key=lambda i: len(encodings[i].ids))
        scores = np.empty(len(documents), np.float64)
        for lo in range(0, len(order), self.batch_size):
            batch = order[lo : lo + self.batch_size]
            scores[batch] = self._run([encodings[i] for i in batch])
        return scores.tolist()

    def _run(self, encodings: list[Any]) -> np.ndarray:
        width = max(len(e.ids) for e in encodings)
        ids = np.full((len(encodings), width), self._pad_id, np.int64)
        mask = np.zeros((len(encodings), width), np.int64)
        types = np.zeros((len(encodings), width), np.int64)
        for row, encoding in enumerate(encodings):
            n = len(encoding.ids)
            ids[row, :n] = encoding.ids
            mask[row, :n] = 1
            types[row, :n] = encoding.type_ids
        feed = {"input_ids": ids}
        if "attention_mask" in self._inputs:
            feed["attention_mask"] = mask
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = types
        try:
            logits = self._session.run(None, feed)[0]
        except Exception as exc:  # a graph failing at run time (shape, bad export)
            raise RerankFailed(f"the cross-encoder {self.name} failed: {exc}") from None
        return _to_probability(logits)
