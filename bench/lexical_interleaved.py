"""ragloom's lexical search beside bm25s's in one process, query by query (bench/scale.py
measures them in separate processes at different moments, which a shared machine's load can
tilt either way).

Usage: python bench/lexical_interleaved.py INDEX [--rounds 2] [--queries 200]
       [--cache /tmp/ragloom-scale/cache]

INDEX is a settled bench/scale.py index (its size read from its name, scale-N.db), opened
read-only. bm25s 0.3.16 (numba backend; k1=0.9, b=0.4, Lucene idf; ragloom's stop words and
Snowball stemmer) indexes the same texts in memory first. For each query kind of
bench/scale.py (very common, common, rare terms; unfiltered), ragloom and bm25s alternate
query by query, the order swapped every other query; prints p50 and p95 and the ratio
(above 1: ragloom faster). bm25s's time includes tokenizing the query, as ragloom's includes
analysing it. Two pairings per kind: hits with their text (`Index.search`, which reads text
and metadata from SQLite; bm25s given its corpus list returns the documents), and ids with
scores (`Index.rank`; bm25s without a corpus).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).parent))
from interleave import alternate, spread  # noqa: E402
from scale_data import BenchEmbedder, Corpus, query_words  # noqa: E402

from ragloom import Index  # noqa: E402
from ragloom.engine.keywords import search_options  # noqa: E402
from ragloom.text.stopwords import ENGLISH  # noqa: E402


def bm25s_over(corpus: Corpus, n: int):
    """A bm25s index over the first `n` texts, its query tokenizer and the texts."""
    import bm25s
    import Stemmer

    texts: list[str] = []
    for lo in range(0, n, 10_000):
        texts.extend(corpus.texts(lo, min(10_000, n - lo)))
    tokenizer = bm25s.tokenization.Tokenizer(
        stopwords=sorted(ENGLISH), stemmer=Stemmer.Stemmer("english")
    )
    tokens = tokenizer.tokenize(texts, update_vocab=True, return_as="tuple", show_progress=False)
    retriever = bm25s.BM25(k1=0.9, b=0.4, method="lucene")
    retriever.index(tokens, show_progress=False)
    retriever.backend = "numba"
    return retriever, tokenizer, texts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("index", type=Path)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/ragloom-scale/cache"))
    args = parser.parse_args()
    found = re.search(r"scale-(\d+)\.db$", args.index.name)
    if not found:
        parser.error("INDEX must be a bench/scale.py index named scale-N.db")
    n = int(found.group(1))
    corpus = Corpus()
    retriever, tokenizer, texts = bm25s_over(corpus, n)
    table = corpus.vector_table(n + 100_000, args.cache)
    index = Index(args.index, embedder=BenchEmbedder(corpus, table=table), read_only=True)
    index.warm()
    segments = index.stats()["collections"]["default"]["segments"]
    out = Table(title=f"{n:,} chunks ({segments}): lexical p50 / p95 ms, one process")
    for column in ("round", "query", "answer", "ragloom", "bm25s", "bm25s / ragloom"):
        out.add_column(column)
    ids_only = search_options(10, mode="lexical")
    for round_ in range(args.rounds):
        for label, terms in query_words(corpus).items():
            words = " ".join(terms)
            for answer in ("hits with text", "ids and scores"):
                with_text = answer == "hits with text"

                def ours(words: str = words, with_text: bool = with_text) -> None:
                    if with_text:
                        index.search(words, top_k=10, mode="lexical")
                    else:
                        index.rank(words, ids_only)

                def theirs(words: str = words, with_text: bool = with_text) -> None:
                    ids = tokenizer.tokenize(
                        [words], update_vocab=False, return_as="ids", show_progress=False
                    )
                    given = texts if with_text else None
                    retriever.retrieve(ids, corpus=given, k=10, show_progress=False)

                for _ in range(10):
                    ours()
                    theirs()
                r, b = alternate(lambda _: ours(), lambda _: theirs(), args.queries)
                ratio = f"{np.median(b) / np.median(r):.2f}x"
                out.add_row(str(round_), label, answer, spread(r), spread(b), ratio)
    index.close()
    Console(width=120).print(out)


if __name__ == "__main__":
    main()
