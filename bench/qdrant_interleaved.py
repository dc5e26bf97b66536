"""ragloom beside embedded Qdrant in one process, in alternating blocks of queries, for
bench/scale.py's query kinds (bench/scale.py times each system in its own process at another
moment of the run, and on a shared machine that alone moves a ratio by 20-40 %).

Usage: python bench/qdrant_interleaved.py WORK [--n 100000] [--rounds 2] [--queries 400]
       [--block 40] [--filters none 1%] [--kinds "lexical rare" "lexical no match" ...]

WORK is a bench/scale.py work folder holding a settled index (`scale-N.db`, opened read-only)
and the embedded Qdrant shard the same run built (`qdrant-N`, optimized), with the vector
table cache (`cache`). For each kind and filter, the two alternate in blocks of 40 queries
(the run's 40 query chunks), the order swapped every other block (query by query, each would
evict the other's caches, slowing both, the more cache-bound the more). Two pairings: hits
with their text and metadata (`Index.search`; Qdrant with its payload) and ids with scores
(`Index.rank`; Qdrant without payload). Prints p50 / p95 ms and the ratio Qdrant p50 /
ragloom p50 (above 1: ragloom faster).

"lexical no match" asks for a word no chunk holds: each system's fixed cost of a query, what
it spends before and around any scoring or hit.

Qdrant runs a query on worker threads. On a 2-vCPU machine whose other vCPU sleeps, waking it
costs each query about 70 us: here, its no-match query took 0.09 ms (ids), and 0.02 under
`taskset -c 0`; its rare-term query with the payload 0.18-0.19, and 0.10. ragloom's lexical
path runs on the calling thread and does not move (rare with text 0.22-0.23 either way).
`taskset -c 0 python bench/qdrant_interleaved.py ...` compares the lexical kinds with Qdrant
at its best (not hybrid: ragloom then loses its second core for the dense leg).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).parent))
from interleave import alternate_blocks, spread  # noqa: E402
from scale_data import (  # noqa: E402
    FILTERS,
    BenchEmbedder,
    Corpus,
    hybrid_words,
    query_chunks,
    query_words,
)
from scale_qdrant import (  # noqa: E402
    bm25_model,
    dense_request,
    hybrid_request,
    lexical_request,
    qdrant_filters,
)

from ragloom import Index  # noqa: E402
from ragloom.engine.keywords import search_options  # noqa: E402

NO_MATCH = "zzqxv"  # every syllable of the corpus's words holds a vowel: this word has none
KINDS = (
    "lexical very common",
    "lexical common",
    "lexical rare",
    "lexical no match",
    "dense",
    "hybrid",
)


def kinds(corpus: Corpus, n: int, table: np.ndarray) -> list[tuple[str, list, list, dict]]:
    """(kind, ragloom query texts, Qdrant (text, vector) pairs, ragloom options) per kind, the
    queries bench/scale.py sends."""
    numbers = query_chunks(n)
    texts = [corpus.texts(number, 1)[0] for number in numbers]
    vectors = [np.asarray(table[number]).tolist() for number in numbers]
    lexical = {**query_words(corpus), "no match": [NO_MATCH]}
    out = [
        (f"lexical {label}", [" ".join(terms)], [(" ".join(terms), None)], {"mode": "lexical"})
        for label, terms in lexical.items()
    ]
    out.append(("dense", texts, [(None, v) for v in vectors], {"mode": "dense"}))
    words = [hybrid_words(t) for t in texts]
    out.append(("hybrid", words, list(zip(words, vectors)), {}))
    return out


def ragloom_query(index: Index, queries: list, spec, options: dict, payload: bool):
    """Query i of a kind: hits with text (`Index.search`) or ids and scores (`Index.rank`)."""
    ranked = search_options(10, filters=spec, **options)

    def run(i: int) -> None:
        text = queries[i % len(queries)]
        if payload:
            index.search(text, top_k=10, filters=spec, **options)
        else:
            index.rank(text, ranked)

    return run


def qdrant_query(shard, model, kind: str, queries: list, where, payload: bool):
    """Query i of a kind, built as bench/scale.py's Qdrant side builds it (its BM25 analysis
    of the query included), with or without the payload."""

    def run(i: int) -> None:
        text, vector = queries[i % len(queries)]
        if kind == "dense":
            request = dense_request(vector, where, payload)
        elif kind == "hybrid":
            request = hybrid_request(model, text, vector, where, payload)
        else:
            request = lexical_request(model, text, where, payload)
        shard.query(request)

    return run


def open_run(work: Path, n: int) -> tuple[Corpus, np.ndarray, Index, object]:
    """A bench/scale.py run's settled index (read-only, warmed) and its Qdrant shard, with the
    corpus and vector table both were built from."""
    import qdrant_edge as q

    corpus = Corpus()
    table = corpus.vector_table(n + 100_000, work / "cache")
    path = work / f"scale-{n}.db"
    index = Index(path, embedder=BenchEmbedder(corpus, table=table), read_only=True)
    index.warm()
    return corpus, table, index, q.EdgeShard.load(str(work / f"qdrant-{n}"))


def check_no_match(index: Index, shard, model) -> None:
    """`NO_MATCH` matches nothing, in either system (else it measures no fixed cost)."""
    assert not index.rank(NO_MATCH, search_options(10, mode="lexical")).candidates
    assert not shard.query(lexical_request(model, NO_MATCH, None, False))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("work", type=Path)
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument("--block", type=int, default=40)
    parser.add_argument("--filters", nargs="+", default=["none", "1%"], choices=FILTERS)
    parser.add_argument("--kinds", nargs="+", default=list(KINDS), choices=KINDS)
    args = parser.parse_args()
    corpus, table, index, shard = open_run(args.work, args.n)
    model = bm25_model()
    where_q = qdrant_filters()
    if "lexical no match" in args.kinds:
        check_no_match(index, shard, model)
    segments = index.stats()["collections"]["default"]["segments"]
    out = Table(
        title=f"{args.n:,} chunks ({segments}): p50 / p95 ms, one process, blocks of"
        f" {args.block} queries alternating; ratio = Qdrant p50 / ragloom p50"
    )
    for column in ("round", "query", "filter", "answer", "ragloom", "Qdrant", "ratio"):
        out.add_column(column)
    for round_ in range(args.rounds):
        for kind, ours_q, theirs_q, options in kinds(corpus, args.n, table):
            if kind not in args.kinds:
                continue
            for fname in args.filters:
                spec, where = FILTERS[fname], where_q[fname]
                for payload in (True, False):
                    ours = ragloom_query(index, ours_q, spec, options, payload)
                    theirs = qdrant_query(shard, model, kind, theirs_q, where, payload)
                    for i in range(20):  # warm both
                        ours(i)
                        theirs(i)
                    r, t = alternate_blocks(ours, theirs, args.queries, args.block)
                    answer = "hits with text" if payload else "ids and scores"
                    ratio = f"{np.median(t) / np.median(r):.2f}x"
                    out.add_row(str(round_), kind, fname, answer, spread(r), spread(t), ratio)
    shard.close()
    index.close()
    Console(width=130).print(out)


if __name__ == "__main__":
    main()
