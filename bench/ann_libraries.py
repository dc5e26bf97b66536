"""Which approximate-search library ragloom uses, by measurement (issue 14).

Usage: python bench/ann_libraries.py [--n 100000] [--cache /tmp/ragloom-cache]

On the scale bench's clustered 384-d vectors (bench/scale_data.py), in one run: faiss HNSW
with 8-bit scalar-quantized storage (what ragloom uses) and with float32 storage, hnswlib, and
usearch (int8 and float32): build time, query latency, recall@10 against exact search (after
exact re-scoring of 40 candidates, as ragloom does), a 10% filter, and size on disk.

With --real (embedded indexes built by bench/steps.py or bench/hybrid.py, whose vectors are
the local model's), a second table puts the synthetic vectors' neighbour structure beside
real all-MiniLM-L6-v2 vectors of the same count: the cosine of a query's 1st and 10th
neighbour and of a typical vector, and faiss HNSW SQ8's recall@10 on each.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).parent))
from scale_data import Corpus  # noqa: E402

M, EF_CONSTRUCTION, EF_SEARCH, K, CANDIDATES = 16, 64, 128, 10, 40


def recall(found: list[np.ndarray], exact: list[np.ndarray], base, queries) -> float:
    """recall@10 after exact re-scoring of the candidates."""
    hits = []
    for ids, truth, q in zip(found, exact, queries):
        ids = ids[ids >= 0]
        best = ids[np.argsort(-(base[ids] @ q))][:K]
        hits.append(len(set(best.tolist()) & set(truth.tolist())) / K)
    return float(np.mean(hits))


def faiss_index(base: np.ndarray, quantized: bool):
    import faiss

    faiss.omp_set_num_threads(2)
    d = base.shape[1]
    if quantized:
        index = faiss.IndexHNSWSQ(d, faiss.ScalarQuantizer.QT_8bit, M, faiss.METRIC_INNER_PRODUCT)
        index.train(base[:50_000])
    else:
        index = faiss.IndexHNSWFlat(d, M, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = EF_CONSTRUCTION
    index.add(base)

    def search(q: np.ndarray, allowed: np.ndarray | None) -> np.ndarray:
        params = faiss.SearchParametersHNSW()
        params.efSearch = EF_SEARCH
        if allowed is not None:
            packed = np.packbits(allowed, bitorder="little")
            params.sel = faiss.IDSelectorBitmap(len(allowed), faiss.swig_ptr(packed))
        return index.search(q.reshape(1, -1), CANDIDATES, params=params)[1][0]

    def size() -> int:
        path = Path(tempfile.mkdtemp()) / "f.index"
        faiss.write_index(index, str(path))
        return path.stat().st_size

    return search, size


def hnswlib_index(base: np.ndarray):
    import hnswlib

    index = hnswlib.Index(space="ip", dim=base.shape[1])
    index.init_index(max_elements=len(base), M=M, ef_construction=EF_CONSTRUCTION)
    index.set_num_threads(2)
    index.add_items(base, np.arange(len(base)))
    index.set_ef(EF_SEARCH)
    index.set_num_threads(1)

    def search(q: np.ndarray, allowed: np.ndarray | None) -> np.ndarray:
        test = None if allowed is None else (lambda i: bool(allowed[i]))  # a Python callback
        return index.knn_query(q, k=CANDIDATES, filter=test)[0][0].astype(np.int64)

    def size() -> int:
        path = Path(tempfile.mkdtemp()) / "h.index"
        index.save_index(str(path))
        return path.stat().st_size

    return search, size


def usearch_index(base: np.ndarray, dtype: str):
    from usearch.index import Index

    index = Index(
        ndim=base.shape[1],
        metric="ip",
        dtype=dtype,
        connectivity=M,
        expansion_add=EF_CONSTRUCTION,
        expansion_search=EF_SEARCH,
    )
    index.add(np.arange(len(base)), base, threads=2)

    def search(q: np.ndarray, allowed: np.ndarray | None) -> np.ndarray | None:
        if allowed is not None:
            return None  # no filtered search from Python
        return np.asarray(index.search(q, CANDIDATES).keys, np.int64)

    def size() -> int:
        path = Path(tempfile.mkdtemp()) / "u.index"
        index.save(str(path))
        return path.stat().st_size

    return search, size


def real_vectors(paths: list[Path]) -> tuple[np.ndarray, np.ndarray]:
    """Passage vectors stored in embedded eval indexes, and their collections' queries
    embedded by the same local model."""
    from ragloom import Index
    from ragloom.embedding.local import LocalEmbedder
    from ragloom.evaluation.beir import load_beir
    from ragloom.evaluation.runner import EVAL_COLLECTION

    embedder = LocalEmbedder()
    data = Path(__file__).resolve().parents[2] / "shared" / "data"
    passages, queries = [], []
    for path in paths:
        with Index(path, embedder=embedder) as index:
            rows = list(index.chunk_documents(EVAL_COLLECTION))
            with index.store.snapshot() as snap:
                passages.append(snap.collection(EVAL_COLLECTION).vectors(rows))
        name = path.name.split("-", 1)[0]
        texts = list(load_beir(data / name).queries.values())
        queries.append(embedder.embed([str(t) for t in texts]))
    return np.vstack(passages).astype(np.float32), np.vstack(queries).astype(np.float32)


def structure(base: np.ndarray, queries: np.ndarray) -> dict[str, float]:
    """Neighbour structure of `base` seen from `queries`, and faiss HNSW SQ8's recall@10."""
    sims = queries @ base.T
    ordered = -np.sort(-sims, axis=1)
    exact = [np.argsort(-row)[:K] for row in sims]
    search, _ = faiss_index(base, True)
    found = [search(q, None) for q in queries]
    return {
        "1st": float(ordered[:, 0].mean()),
        "10th": float(ordered[:, K - 1].mean()),
        "median": float(np.median(ordered[:, ordered.shape[1] // 2])),
        "recall": recall(found, exact, base, queries),
    }


def realism(paths: list[Path], cache: Path) -> None:
    real_base, real_queries = real_vectors(paths)
    n = len(real_base)
    synthetic = Corpus().vector_table(n + 1_000, cache)
    held = np.random.default_rng(0).choice(n, 500, replace=False)
    rest = np.setdiff1d(np.arange(n), held)
    rows = {
        "real, queries -> passages": (real_base, real_queries),
        "real, passages -> other passages": (real_base[rest], real_base[held]),
        "synthetic (bench/scale_data.py)": (
            np.ascontiguousarray(synthetic[:n]),
            np.ascontiguousarray(synthetic[n + 1 : n + 501]),
        ),
    }
    names = ", ".join(p.name.split("-", 1)[0] for p in paths)
    table = Table(title=f"Neighbour structure, {n:,} vectors (real: all-MiniLM-L6-v2 on {names})")
    for column in ("vectors", "cosine 1st", "cosine 10th", "cosine median", "HNSW recall@10"):
        table.add_column(column)
    for name, (base, queries) in rows.items():
        found = structure(np.ascontiguousarray(base), np.ascontiguousarray(queries))
        table.add_row(
            name,
            f"{found['1st']:.3f}",
            f"{found['10th']:.3f}",
            f"{found['median']:.3f}",
            f"{found['recall']:.3f}",
        )
    Console(width=140).print(table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/ragloom-scale/cache"))
    parser.add_argument(
        "--real", type=Path, nargs="*", default=[], help="embedded eval indexes (*.db)"
    )
    args = parser.parse_args()
    if args.real:
        realism(args.real, args.cache)
    corpus = Corpus()
    table = corpus.vector_table(args.n + 10_000, args.cache)
    base = np.ascontiguousarray(table[: args.n])
    queries = np.ascontiguousarray(table[args.n + 1 : args.n + 201])
    allowed = np.arange(args.n) % 10 == 3
    exact = [np.argsort(-(base @ q))[:K] for q in queries]
    exact_f = [np.flatnonzero(allowed)[np.argsort(-(base[allowed] @ q))[:K]] for q in queries]
    table_out = Table(title=f"{args.n:,} clustered 384-d vectors, M={M}, efSearch={EF_SEARCH}")
    for column in (
        "library",
        "build s",
        "query ms p50",
        "recall@10",
        "10% filter ms p50",
        "filter recall@10",
        "bytes/vector",
    ):
        table_out.add_column(column)
    builders = {
        "faiss HNSW SQ8 (ragloom)": lambda: faiss_index(base, True),
        "faiss HNSW float32": lambda: faiss_index(base, False),
        "hnswlib float32": lambda: hnswlib_index(base),
        "usearch int8": lambda: usearch_index(base, "i8"),
        "usearch float32": lambda: usearch_index(base, "f32"),
    }
    for name, build in builders.items():
        started = time.perf_counter()
        search, size = build()
        build_s = time.perf_counter() - started
        times, found = [], []
        for q in queries:
            t = time.perf_counter()
            found.append(search(q, None))
            times.append((time.perf_counter() - t) * 1000)
        ftimes, ffound = [], []
        for q in queries:
            t = time.perf_counter()
            ids = search(q, allowed)
            ftimes.append((time.perf_counter() - t) * 1000)
            ffound.append(ids)
        filtered = ffound[0] is not None
        table_out.add_row(
            name,
            f"{build_s:.1f}",
            f"{statistics.median(times):.2f}",
            f"{recall(found, exact, base, queries):.3f}",
            f"{statistics.median(ftimes):.2f}" if filtered else "no filter API",
            f"{recall(ffound, exact_f, base, queries):.3f}" if filtered else "-",
            f"{size() / args.n:.0f}",
        )
    Console(width=140).print(table_out)
    print(f"threads: build 2, search 1; cpu: {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
