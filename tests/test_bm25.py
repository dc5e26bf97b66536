"""BM25 scoring: the formula by hand, and incremental updates equal to a fresh build."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from ragloom.lexical import BM25Params, LexicalIndex, bm25_idf
from ragloom.lexical.index import MAX_SEGMENTS, Postings


def postings(pairs: dict[int, int]) -> Postings:
    ids = sorted(pairs)
    return Postings(np.array(ids, np.uint32), np.array([pairs[i] for i in ids], np.float32))


def test_scores_match_the_formula_by_hand():
    # three chunks: term 1 appears in two of them
    index = LexicalIndex()
    index.add([10, 11, 12], [postings({1: 2, 2: 1}), postings({1: 1, 3: 3}), postings({4: 1})])
    params = BM25Params(k1=1.2, b=0.75)
    rows, scores = index.search([1], 10, params)
    n, df, avgdl = 3, 2, (3 + 4 + 1) / 3
    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))

    def bm25(tf: float, dl: float) -> float:
        return idf * tf * 2.2 / (tf + 1.2 * (1 - 0.75 + 0.75 * dl / avgdl))

    assert rows.tolist() == [10, 11]
    assert scores.tolist() == pytest.approx([bm25(2, 3), bm25(1, 4)], rel=1e-12)


def test_idf_is_positive_even_for_a_term_in_every_document():
    assert bm25_idf(df=5, n_docs=5) > 0


def test_k1_and_b_change_scores_without_reindexing():
    index = LexicalIndex()
    index.add([1, 2], [postings({1: 3, 2: 5}), postings({1: 1})])
    _, a = index.search([1], 2, BM25Params(0.9, 0.4))
    _, b = index.search([1], 2, BM25Params(2.0, 1.0))
    assert not np.allclose(a, b)


def test_removed_rows_are_not_returned_and_statistics_shrink():
    index = LexicalIndex()
    index.add([1, 2, 3], [postings({7: 1}), postings({7: 2}), postings({8: 1})])
    index.remove([2])
    rows, _ = index.search([7], 10, BM25Params())
    assert rows.tolist() == [1]
    assert index.df(7) == 1 and index.n_docs == 2


def test_empty_query_and_empty_index_return_nothing():
    index = LexicalIndex()
    assert len(index.search([1], 5, BM25Params())[0]) == 0
    index.add([1], [postings({1: 1})])
    assert len(index.search([], 5, BM25Params())[0]) == 0


def _random_corpus(rng: random.Random, n: int, vocab: int = 40) -> dict[int, Postings]:
    docs = {}
    for row in range(n):
        terms = {rng.randrange(vocab): rng.randint(1, 4) for _ in range(rng.randint(1, 12))}
        docs[row] = postings(terms)
    return docs


@pytest.mark.parametrize("seed", range(12))
def test_incremental_updates_equal_a_fresh_build(seed: int):
    """Random adds (in batches) and deletes, then compare every query's scores exactly."""
    rng = random.Random(seed)
    corpus = _random_corpus(rng, 300)
    live: dict[int, Postings] = {}
    index = LexicalIndex()
    pending = list(corpus)
    rng.shuffle(pending)
    while pending:
        batch = [pending.pop() for _ in range(min(len(pending), rng.randint(1, 25)))]
        index.add(batch, [corpus[r] for r in batch])
        live.update((r, corpus[r]) for r in batch)
        if live and rng.random() < 0.6:
            gone = rng.sample(sorted(live), k=min(len(live), rng.randint(1, 15)))
            index.remove(gone)
            for r in gone:
                del live[r]
    fresh = LexicalIndex()
    fresh.add(sorted(live), [live[r] for r in sorted(live)])
    assert len(index._segments) <= MAX_SEGMENTS + 1
    params = BM25Params()
    for _ in range(30):
        query = [rng.randrange(45) for _ in range(rng.randint(1, 6))]
        rows_a, scores_a = index.search(query, 1000, params)
        rows_b, scores_b = fresh.search(query, 1000, params)
        assert dict(zip(rows_a.tolist(), scores_a.tolist())) == dict(
            zip(rows_b.tolist(), scores_b.tolist())
        )


def test_allowed_rows_restrict_candidates_before_top_n():
    index = LexicalIndex()
    rows = list(range(1000))
    index.add(rows, [postings({1: 1 + (r % 5)}) for r in rows])
    allowed = np.array([7, 501, 999])
    got, _ = index.search([1], 2, BM25Params(), allowed_rows=allowed)
    assert set(got.tolist()) <= {7, 501, 999} and len(got) == 2


def test_adding_a_row_twice_is_refused():
    index = LexicalIndex()
    index.add([1], [postings({1: 1})])
    with pytest.raises(ValueError, match="already indexed"):
        index.add([1], [postings({2: 1})])
