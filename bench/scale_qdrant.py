"""Embedded Qdrant (`qdrant-edge-py`) as bench/scale.py's peer for every query kind: the same
chunks, vectors, metadata and queries as ragloom, in one local shard (no server).

Lexical: Qdrant's own BM25 (`qdrant_edge.Bm25`, English stop words and stemmer, k1=0.9 and
b=0.4 as ragloom, the corpus's average length) as sparse vectors with the IDF modifier.
Dense: cosine over the 384-d vectors with its HNSW index (m=16, ef_construct=100, its
defaults). Hybrid: both as prefetches fused by RRF. Filters: a keyword-indexed integer
payload (`group`, `shard`), applied inside each prefetch; the payload holds the chunk's
text too, so that a hit can carry it as ragloom's do. Qdrant Edge builds its HNSW index
and merges its segments only when asked (`optimize()`), so the build role does that before
closing (its steady state) and the time is reported beside the upserts.
"""

from __future__ import annotations

import shutil
import time
from functools import partial
from pathlib import Path

import numpy as np
from scale_data import PASSES, Corpus, hybrid_words, merge_passes, query_chunks, query_words

BATCH = 10_000


def bm25_model():
    from qdrant_edge import Bm25, Bm25Config

    return Bm25(Bm25Config(k=0.9, b=0.4, avg_len=55.0, language="english"))


def build_qdrant(path: Path, n: int, cache: Path) -> dict:
    import qdrant_edge as q

    shutil.rmtree(path, ignore_errors=True)
    corpus = Corpus()
    table = corpus.vector_table(n + 100_000, cache)
    config = q.EdgeConfig(
        vectors={"dense": q.EdgeVectorParams(size=384, distance=q.Distance.Cosine)},
        sparse_vectors={"bm25": q.EdgeSparseVectorParams(modifier=q.Modifier.Idf)},
    )
    shard = q.EdgeShard.create(str(path), config)
    for field in ("group", "shard"):
        shard.update(q.UpdateOperation.create_field_index(field, q.PayloadSchemaType.Integer))
    model = bm25_model()
    upsert_s = 0.0  # embedding the sparse vectors and upserting; not generating the texts
    for lo in range(0, n, BATCH):
        texts = corpus.texts(lo, min(BATCH, n - lo))
        vectors = np.asarray(table[lo : lo + len(texts)])
        started = time.perf_counter()
        points = [
            q.Point(
                lo + i,
                {"dense": vectors[i].tolist(), "bm25": model.embed_document(text)},
                {**corpus.metadata(lo + i), "text": text},
            )
            for i, text in enumerate(texts)
        ]
        shard.update(q.UpdateOperation.upsert_points(points))
        upsert_s += time.perf_counter() - started
    started = time.perf_counter()
    shard.optimize()
    optimize_s = time.perf_counter() - started
    info = shard.info()
    shard.flush()
    shard.close()
    return {
        "upsert_s": upsert_s,
        "chunks_per_s": n / upsert_s,
        "optimize_s": optimize_s,
        "segments": info.segments_count,
        "version": _version(),
    }


def _version() -> str:
    from importlib.metadata import version

    return version("qdrant-edge-py")


def serve_qdrant(path: Path, n: int, cache: Path, passes: int = PASSES) -> dict:
    """Open the shard and run bench/scale.py's query mix, one query at a time: once to warm
    (as ragloom's settled figures follow its at-open pass), then `passes` timed passes, each
    with each hit's payload (its text and metadata, as ragloom's hits), then with ids and
    scores only (keys ending in " ids", beside ragloom's `Index.rank`)."""
    import qdrant_edge as q

    corpus = Corpus()
    table = corpus.vector_table(n + 100_000, cache)
    started = time.perf_counter()
    shard = q.EdgeShard.load(str(path))
    open_s = time.perf_counter() - started
    model = bm25_model()
    words = {label: " ".join(terms) for label, terms in query_words(corpus).items()}
    filters = qdrant_filters()
    rows = np.arange(n)
    masks = {"none": None, "1%": rows % 100 == 7, "0.1%": (rows * 7919) % 1000 == 123}
    queries = query_chunks(n)
    texts = [corpus.texts(number, 1)[0] for number in queries]

    out: dict = {"open_s": open_s}
    matrix = np.asarray(table[:n])
    setting = (shard, model, words, filters, masks, queries, texts, table, matrix)
    _mix(*setting, payload=True, suffix="")  # warm-up pass, not reported
    timed = [
        {
            **_mix(*setting, payload=True, suffix="", recall=i == 0),
            **_mix(*setting, payload=False, suffix=" ids", recall=i == 0),
        }
        for i in range(passes)
    ]
    out.update(merge_passes(timed))
    shard.close()
    return out


def qdrant_filters() -> dict:
    """bench/scale.py's filters as Qdrant conditions on the keyword-indexed payload."""
    import qdrant_edge as q

    return {
        "none": None,
        "1%": q.Filter(must=[q.FieldCondition(key="group", match=q.MatchValue(7))]),
        "0.1%": q.Filter(must=[q.FieldCondition(key="shard", match=q.MatchValue(123))]),
    }


def lexical_request(model, text: str, where, payload: bool):
    """A top-10 BM25 query (the query's own analysis included, as ragloom's)."""
    import qdrant_edge as q

    return q.QueryRequest(
        limit=10,
        query=q.Query.Nearest(model.embed_query(text), using="bm25"),
        filter=where,
        with_payload=payload,
    )


def dense_request(vector: list[float], where, payload: bool):
    """A top-10 HNSW query."""
    import qdrant_edge as q

    return q.QueryRequest(
        limit=10, query=q.Query.Nearest(vector, using="dense"), filter=where, with_payload=payload
    )


def hybrid_request(model, words: str, vector: list[float], where, payload: bool):
    """Both legs as prefetches of 50, filtered inside each, fused by RRF (k 60)."""
    import qdrant_edge as q

    sparse = model.embed_query(words)
    return q.QueryRequest(
        limit=10,
        prefetches=[
            q.Prefetch(limit=50, query=q.Query.Nearest(sparse, using="bm25"), filter=where),
            q.Prefetch(limit=50, query=q.Query.Nearest(vector, using="dense"), filter=where),
        ],
        query=q.Fusion.Rrf(k=60),
        with_payload=payload,
    )


def _mix(
    shard,
    model,
    words,
    filters,
    masks,
    queries,
    texts,
    table,
    matrix,
    payload: bool,
    suffix: str,
    recall: bool = True,
) -> dict:
    """One pass of the query mix: latencies per kind and filter (keys + `suffix`), and
    (`recall`) dense recall@10 against exact; hits with their payload (text, metadata) or
    without."""

    def timed(request) -> tuple[float, list]:
        """Milliseconds for one query, the query's own BM25 analysis included (`request`
        builds the request, as ragloom's timings include analysing the query text)."""
        began = time.perf_counter()
        found = shard.query(request())
        return (time.perf_counter() - began) * 1000, found

    out: dict = {}
    found_by: dict[str, list[set[int]]] = {}
    for fname, where in filters.items():
        for label, text in words.items():
            request = partial(lexical_request, model, text, where, payload)
            out[f"lexical {label} {fname}{suffix}"] = [timed(request)[0] for _ in queries]
        times, hits = [], []
        for number in queries:
            vector = np.asarray(table[number]).tolist()
            took, found = timed(
                lambda vector=vector, where=where: dense_request(vector, where, payload)
            )
            times.append(took)
            hits.append({int(p.id) for p in found})
        out[f"dense {fname}{suffix}"] = times
        found_by[fname] = hits
        hybrid = []
        for number, text in zip(queries, texts):
            vector = np.asarray(table[number]).tolist()

            def request(vector=vector, text=text, where=where):
                return hybrid_request(model, hybrid_words(text), vector, where, payload)

            hybrid.append(timed(request)[0])
        out[f"hybrid {fname}{suffix}"] = hybrid
    if not recall:
        return out
    for fname, hits in found_by.items():  # after every timed loop: exact scans evict caches
        shares = []
        for number, got in zip(queries, hits):
            scores = matrix @ table[number]
            if masks[fname] is not None:
                scores = np.where(masks[fname], scores, -np.inf)
            exact = set(np.argpartition(-scores, 10)[:10].tolist())
            shares.append(len(got & exact) / 10)
        out[f"dense recall {fname}{suffix}"] = float(np.mean(shares))
    return out
