"""The peers bench/scale.py measures in the same run: SQLite FTS5 (BM25 in SQL, no top-k
pruning), bm25s (lexical indexing in memory, the issue's peer for ingest speed) and exact
numpy search over the same vectors (one matrix-vector product)."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import numpy as np
from scale_data import Corpus, query_words


def build_fts5(corpus: Corpus, n: int, path: Path) -> dict[str, float]:
    """An FTS5 table over the same texts, with the filter keys as unindexed columns."""
    path.unlink(missing_ok=True)
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(body, grp UNINDEXED, shard UNINDEXED)")
    seconds = 0.0  # inserts and commits only, as for ragloom: not generating the texts
    for lo in range(0, n, 10_000):
        texts = corpus.texts(lo, min(10_000, n - lo))
        rows = [
            (lo + i + 1, text, (lo + i) % 100, ((lo + i) * 7919) % 1000)
            for i, text in enumerate(texts)
        ]
        started = time.perf_counter()
        conn.executemany("INSERT INTO t (rowid, body, grp, shard) VALUES (?, ?, ?, ?)", rows)
        conn.commit()
        seconds += time.perf_counter() - started
    conn.close()
    return {"build_s": seconds, "bytes": path.stat().st_size}


def build_bm25s(corpus: Corpus, n: int, repeats: int = 40) -> dict:
    """bm25s over the same texts with ragloom's analysis (its English stop words, PyStemmer
    English, Lucene BM25 k1=0.9 b=0.4): tokenizing and indexing, in memory, one thread;
    generating the texts is not counted. Then the same lexical queries as ragloom's (top 10,
    tokenizing the query counted), with bm25s's numpy backend and, when numba is installed,
    its numba backend; filters as bm25s's weight mask over the same rows."""
    import bm25s
    import Stemmer

    from ragloom.text.stopwords import ENGLISH

    texts: list[str] = []
    for lo in range(0, n, 10_000):
        texts.extend(corpus.texts(lo, min(10_000, n - lo)))
    started = time.perf_counter()
    tokenizer = bm25s.tokenization.Tokenizer(
        stopwords=sorted(ENGLISH), stemmer=Stemmer.Stemmer("english")
    )
    tokens = tokenizer.tokenize(texts, update_vocab=True, return_as="tuple", show_progress=False)
    retriever = bm25s.BM25(k1=0.9, b=0.4, method="lucene")
    retriever.index(tokens, show_progress=False)
    seconds = time.perf_counter() - started
    del texts, tokens
    out: dict = {"build_s": seconds, "chunks_per_s": n / seconds, "version": bm25s.__version__}
    rows = np.arange(n)
    masks = {
        "none": None,
        "1%": (rows % 100 == 7).astype(np.float32),
        "0.1%": ((rows * 7919) % 1000 == 123).astype(np.float32),
    }
    try:
        import numba  # noqa: F401

        backends = ["numpy", "numba"]
    except ImportError:
        backends = ["numpy"]
    for backend in backends:
        retriever.backend = backend
        for fname, mask in masks.items():
            for label, terms in query_words(corpus).items():
                query = " ".join(terms)

                def ask(query: str = query, mask: np.ndarray | None = mask) -> None:
                    ids = tokenizer.tokenize(
                        [query], update_vocab=False, return_as="ids", show_progress=False
                    )
                    retriever.retrieve(ids, k=10, show_progress=False, weight_mask=mask)

                ask()  # numba compiles on the first call
                times = []
                for _ in range(repeats):
                    began = time.perf_counter()
                    ask()
                    times.append((time.perf_counter() - began) * 1000)
                out[f"{backend} lexical {label} {fname}"] = times
    return out


def fts5_query(conn: sqlite3.Connection, words: list[str], where: tuple[str, int] | None):
    match = " OR ".join(f'"{w}"' for w in words)
    sql = "SELECT rowid, bm25(t) FROM t WHERE t MATCH ?"
    params: list = [match]
    if where is not None:
        sql += f" AND {where[0]} = ?"
        params.append(where[1])
    return conn.execute(sql + " ORDER BY rank LIMIT 10", params).fetchall()


def exact_topk(matrix: np.ndarray, query: np.ndarray, k: int, mask: np.ndarray | None):
    """Exact top k by inner product (unit vectors: cosine), over rows passing `mask`."""
    scores = matrix @ query
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    top = np.argpartition(-scores, k)[:k]
    return top[np.argsort(-scores[top])]
