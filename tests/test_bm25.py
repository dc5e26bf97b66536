"""BM25 scoring: the formula by hand, and incremental versions equal to a fresh build."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from ragloom.config import CollectionConfig
from ragloom.filters import parse_filter
from ragloom.lexical import BM25Params, bm25_idf
from ragloom.lexical.bm25_search import search_view
from ragloom.segments.merge_memory import compact_memory, merge_parts
from ragloom.segments.postings import Postings
from ragloom.segments.view import CollectionView, Part
from tests.segment_data import build_segment


def postings(pairs: dict[int, int]) -> Postings:
    ids = sorted(pairs)
    return Postings(np.array(ids, np.uint32), np.array([pairs[i] for i in ids], np.uint32))


def view_of(rows: list[int], docs: list[Postings], metadata=None) -> CollectionView:
    segment = build_segment(rows, docs, metadata or [{}] * len(rows))
    return CollectionView(1, "c", CollectionConfig(), 1, (Part(segment),), max_row=max(rows))


def test_scores_match_the_formula_by_hand():
    # three chunks: term 1 appears in two of them
    view = view_of([10, 11, 12], [postings({1: 2, 2: 1}), postings({1: 1, 3: 3}), postings({4: 1})])
    params = BM25Params(k1=1.2, b=0.75)
    rows, scores = search_view(view, [1], 10, params)
    n, df, avgdl = 3, 2, (3 + 4 + 1) / 3
    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))

    def bm25(tf: float, dl: float) -> float:
        return idf * tf * 2.2 / (tf + 1.2 * (1 - 0.75 + 0.75 * dl / avgdl))

    assert rows.tolist() == [10, 11]
    assert scores.tolist() == pytest.approx([bm25(2, 3), bm25(1, 4)], rel=1e-12)


def test_idf_is_positive_even_for_a_term_in_every_document():
    assert bm25_idf(df=5, n_docs=5) > 0


def test_k1_and_b_change_scores_without_reindexing():
    view = view_of([1, 2], [postings({1: 3, 2: 5}), postings({1: 1})])
    _, a = search_view(view, [1], 2, BM25Params(0.9, 0.4))
    _, b = search_view(view, [1], 2, BM25Params(2.0, 1.0))
    assert not np.allclose(a, b)


def test_removed_rows_are_not_returned_and_statistics_shrink():
    view = view_of([1, 2, 3], [postings({7: 1}), postings({7: 2}), postings({8: 1})])
    view = view.evolve(2, removed=[2])
    rows, _ = search_view(view, [7], 10, BM25Params())
    assert rows.tolist() == [1]
    assert view.df(7) == 1 and view.n_live == 2


def test_empty_query_and_empty_view_return_nothing():
    empty = CollectionView(1, "c", CollectionConfig(), 1, ())
    assert len(search_view(empty, [1], 5, BM25Params())[0]) == 0
    view = view_of([1], [postings({1: 1})])
    assert len(search_view(view, [], 5, BM25Params())[0]) == 0


def _random_corpus(rng: random.Random, n: int, vocab: int = 40) -> dict[int, Postings]:
    docs = {}
    for row in range(1, n + 1):
        terms = {rng.randrange(vocab): rng.randint(1, 4) for _ in range(rng.randint(1, 12))}
        docs[row] = postings(terms)
    return docs


@pytest.mark.parametrize("seed", range(12))
def test_incremental_versions_equal_a_fresh_build(seed: int):
    """Random adds (in batches, rows ascending) and deletes, in-memory merges between them;
    then every query's scores compared exactly with one segment built from the survivors."""
    rng = random.Random(seed)
    corpus = _random_corpus(rng, 300)
    live: dict[int, Postings] = {}
    view = CollectionView(1, "c", CollectionConfig(), 0, ())
    order = sorted(corpus)
    generation = 0
    while order:
        batch = [order.pop(0) for _ in range(min(len(order), rng.randint(1, 25)))]
        generation += 1
        segment = build_segment(batch, [corpus[r] for r in batch], [{}] * len(batch))
        view = compact_memory(view.evolve(generation, added=[Part(segment)]))
        live.update((r, corpus[r]) for r in batch)
        if live and rng.random() < 0.6:
            gone = rng.sample(sorted(live), k=min(len(live), rng.randint(1, 15)))
            generation += 1
            view = compact_memory(view.evolve(generation, removed=gone))
            for r in gone:
                del live[r]
    fresh = view_of(sorted(live), [live[r] for r in sorted(live)])
    merged_once = merge_parts(view.parts, 0, None)
    assert len(view.parts) <= 8 * 3
    params = BM25Params()
    for _ in range(30):
        query = [rng.randrange(45) for _ in range(rng.randint(1, 6))]
        a = search_view(view, query, 1000, params)
        b = search_view(fresh, query, 1000, params)
        assert a[0].tolist() == b[0].tolist()
        assert a[1].tolist() == b[1].tolist()  # exactly, not approximately
        c = view_of(merged_once.rows.tolist(), [live[r] for r in merged_once.rows.tolist()])
        assert search_view(c, query, 1000, params)[1].tolist() == b[1].tolist()


def test_filters_restrict_candidates_before_top_n():
    rows = list(range(1, 1001))
    view = view_of(rows, [postings({1: 1 + (r % 5)}) for r in rows], [{"n": r % 100} for r in rows])
    spec = {"n": {"$in": [7, 51]}}
    got, _ = search_view(view, [1], 2, BM25Params(), parse_filter(spec), "k")
    assert len(got) == 2 and all(r % 100 in (7, 51) for r in got.tolist())
