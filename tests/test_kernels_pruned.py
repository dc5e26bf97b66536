"""The pruning kernels (block-max MaxScore, block-max windows) return exactly what scoring every
match returns: the same chunks, the same scores to the last bit, ties kept; filters and
deletes respected; any k, any number of query terms, repeats included."""

from __future__ import annotations

import numpy as np
import pytest

from ragloom.compiled import Compiled
from ragloom.lexical import kernels, topk
from ragloom.lexical.bm25 import BM25Params, bm25_idf
from ragloom.lexical.term_weights import term_facts, term_weights
from ragloom.lexical.topk import Stats, Target, search
from ragloom.segments.postings import Postings
from tests.segment_data import build_segment


@pytest.fixture(autouse=True)
def _compiled(monkeypatch):
    monkeypatch.delenv("RAGLOOM_KERNELS", raising=False)
    monkeypatch.setattr(kernels, "_kernels", Compiled(kernels._build))
    assert kernels.available(), "numba is a dependency: the compiled kernels must load"


def _segment(rng, n, vocab, ties=False, first_row=1):
    """Zipf-distributed chunks; with `ties`, every chunk has the same length and each term
    once, so a term weighs the same in every chunk (scores tie everywhere)."""
    postings = []
    for _ in range(n):
        if ties:
            ids = np.sort(rng.choice(vocab, size=6, replace=False))
            counts = np.ones(6)
        else:
            words = np.minimum(rng.zipf(1.3, size=int(rng.integers(5, 60))), vocab) - 1
            ids, counts = np.unique(words, return_counts=True)
        postings.append(Postings(ids.astype(np.uint32), counts.astype(np.uint32)))
    return build_segment(np.arange(first_row, first_row + n), postings, [{}] * n)


def _stats(segment, terms, eligible=None):
    alive = np.ones(segment.n, bool) if eligible is None else eligible
    idf = {}
    for t in set(terms):
        docs, _ = segment.postings(t)
        idf[t] = bm25_idf(int(alive[docs].sum()), int(alive.sum()))
    return Stats(idf, float(segment.lengths[alive].mean()))


def _reference(segment, terms, stats, params, eligible, k, theta):
    """Every eligible match's score (query order, as `_score_all`), then those at or above
    theta and the k-th best of them."""
    docs, scores = topk._score_all(Target(segment, eligible), terms, stats, params)
    keep = scores >= theta
    docs, scores = docs[keep], scores[keep]
    if len(scores) >= k:
        floor = np.sort(scores)[::-1][k - 1]
        keep = scores >= floor
        docs, scores = docs[keep], scores[keep]
    return docs.tolist(), scores.tolist()


def _pruned(segment, terms, stats, params, eligible, k, theta, share):
    indexes = [segment.term_index(t) for t in terms]
    ranges = [(int(segment.ptr[i]), int(segment.ptr[i + 1])) if i >= 0 else (0, 0) for i in indexes]
    weights = [term_weights(segment, stats, params, t)[1] for t in terms]
    maxima = [term_facts(segment, stats, params, t).maxima for t in terms]
    docs, scores = kernels.score_top_pruned(
        segment.docs, ranges, weights, maxima, segment.n, eligible, k, theta, share
    )
    order = np.argsort(docs, kind="stable")
    return docs[order].tolist(), scores[order].tolist()


@pytest.mark.parametrize("seed", range(6))
def test_both_kernels_equal_scoring_every_match(seed: int) -> None:
    rng = np.random.default_rng(seed)
    ties = seed % 3 == 2
    segment = _segment(rng, int(rng.integers(3000, 9000)), vocab=40 if ties else 2000, ties=ties)
    params = BM25Params(
        k1=float(rng.choice([0.9, 1.2, 2.0])), b=float(rng.choice([0.0, 0.4, 0.75]))
    )
    for trial in range(12):
        size = int(rng.choice([1, 2, 3, 5, 8]))
        top = 40 if ties else 3000
        terms = [int(t) for t in np.minimum(rng.zipf(1.2, size=size), top) - 1]
        if rng.random() < 0.3:
            terms.insert(int(rng.integers(0, len(terms) + 1)), terms[0])  # repeated word
        if rng.random() < 0.2:
            terms.append(10**6)  # a word no chunk has
        kind = trial % 3
        eligible = None
        if kind == 1:
            eligible = rng.random(segment.n) > 0.1  # deletes
        elif kind == 2:
            eligible = rng.random(segment.n) < 0.3  # a filter
        stats = _stats(segment, terms, eligible)
        for k in (1, 3, 10, 100, 10**6):  # the last: more than match
            want = _reference(segment, terms, stats, params, eligible, k, 0.0)
            for share in (0, 1, 10**9):  # windows; MaxScore; MaxScore giving up early
                got = _pruned(segment, terms, stats, params, eligible, k, 0.0, share)
                assert got == want, (seed, terms, k, share)
            if want[1]:  # a k-th score already reached elsewhere
                theta = float(np.median(want[1]))
                want = _reference(segment, terms, stats, params, eligible, k, theta)
                for share in (0, 1, 10**9):
                    got = _pruned(segment, terms, stats, params, eligible, k, theta, share)
                    assert got == want, (seed, terms, k, share, theta)


def test_ties_at_the_kth_score_are_all_returned() -> None:
    rng = np.random.default_rng(42)
    segment = _segment(rng, 5000, vocab=12, ties=True)
    params = BM25Params()
    for terms in ([3], [3, 7], [7, 3, 3]):
        stats = _stats(segment, terms)
        want = _reference(segment, terms, stats, params, None, 10, 0.0)
        assert len(want[0]) > 10  # the test needs ties at the k-th score
        for share in (0, 1, 10**9):
            assert _pruned(segment, terms, stats, params, None, 10, 0.0, share) == want


@pytest.mark.parametrize(
    ("share", "walked"), [(0, 0), (1, 0), (16, 0), (10**9, 0), (16, topk.MAXSCORE_WALKED)]
)
def test_search_with_the_pruning_kernels_equals_exhaustive(
    monkeypatch, share: int, walked: int
) -> None:
    """Through `topk.search`: several segments (the k-th score carried from one to the next),
    deletes and filters; windows only, MaxScore always tried first, MaxScore giving up early,
    and the default choice between them."""
    monkeypatch.setattr(topk, "PRUNE_WORK", 0)
    monkeypatch.setattr(topk, "MAXSCORE_SHARE", share)
    monkeypatch.setattr(topk, "MAXSCORE_WALKED", walked)
    rng = np.random.default_rng(share % 97 + walked)
    segments, row = [], 1
    for n in (7000, 2500, 600):
        segments.append(_segment(rng, n, vocab=1500, first_row=row))
        row += n + 2
    for trial in range(15):
        targets = []
        for segment in segments:
            eligible = None if trial % 3 == 0 else rng.random(segment.n) < (0.9, 0.2)[trial % 2]
            targets.append(Target(segment, eligible))
        terms = [int(t) for t in np.minimum(rng.zipf(1.2, size=int(rng.integers(1, 7))), 1500) - 1]
        alive = sum(
            int(t.eligible.sum()) if t.eligible is not None else t.segment.n for t in targets
        )
        df = {
            t: sum(
                int(
                    (t_.eligible if t_.eligible is not None else np.ones(t_.segment.n, bool))[
                        t_.segment.postings(t)[0]
                    ].sum()
                )
                for t_ in targets
            )
            for t in set(terms)
        }
        stats = Stats({t: bm25_idf(df[t], alive) for t in terms}, 30.0)
        for k in (1, 10, 50, 10**5):
            fast = search(targets, terms, k, stats, BM25Params())
            slow = search(targets, terms, k, stats, BM25Params(), prune=False)
            assert fast[0].tolist() == slow[0].tolist()
            assert fast[1].tolist() == slow[1].tolist()


def test_mismatched_inputs_are_refused() -> None:
    docs = np.arange(10, dtype=np.uint32)
    good = np.ones(10)
    with pytest.raises(ValueError):
        kernels.score_top_pruned(docs, [(0, 10)], [good[:5]], [np.ones(1)], 10, None, 3, 0.0, 0)
    with pytest.raises(ValueError):
        kernels.score_top_pruned(
            docs, [(0, 10)], [good.astype(np.float32)], [np.ones(1)], 10, None, 3, 0.0, 0
        )
    with pytest.raises(ValueError):
        kernels.score_top_pruned(docs, [(0, 10)], [good], [np.ones(3)], 10, None, 3, 0.0, 0)
    with pytest.raises(ValueError):
        kernels.score_top_pruned(docs, [(5, 15)], [good], [np.ones(1)], 10, None, 3, 0.0, 0)
    for dense in ([np.ones(9)], [np.ones(10, np.float32)], [None, None]):  # read by address
        with pytest.raises(ValueError):
            kernels.score_top_pruned(
                docs, [(0, 10)], [good], [np.ones(1)], 10, None, 3, 0.0, 16, dense=dense
            )


def _maxscore_inputs(segment, terms, stats, params):
    """The MaxScore kernel's arrays for a query: (lo, hi, weight addresses, minima, block
    maxima, their offsets)."""
    indexes = [segment.term_index(t) for t in terms]
    lo = np.array([segment.ptr[i] for i in indexes], np.int64)
    hi = np.array([segment.ptr[i + 1] for i in indexes], np.int64)
    weights = [term_weights(segment, stats, params, t)[1] for t in terms]
    maxima = [term_facts(segment, stats, params, t).maxima for t in terms]
    boff = np.concatenate(([0], np.cumsum([len(m) for m in maxima]))).astype(np.int64)
    address = np.array([w.ctypes.data for w in weights], np.int64)
    wmin = np.array([w.min() for w in weights])
    return lo, hi, address, wmin, np.concatenate(maxima), boff


def test_maxscore_gives_up_when_its_bounds_do_not_prune() -> None:
    """Three of the commonest words and a large k: nearly every chunk needs a look-up, so
    MaxScore hands the segment to the windows (and the answer stays exact)."""
    rng = np.random.default_rng(8)
    segment = _segment(rng, 6000, vocab=2000)
    terms, params = [0, 1, 2], BM25Params()
    stats = _stats(segment, terms)
    run = kernels._kernels.get()["maxscore"]
    lo, hi, address, wmin, bmax, boff = _maxscore_inputs(segment, terms, stats, params)
    mask = np.zeros(1, np.bool_)
    unread = (np.zeros(3, np.int64), np.zeros(3))  # no term read by chunk number
    args = (segment.docs, lo, hi, address, wmin, unread, bmax, boff, mask, False, 500, 0.0)
    assert run(*args, 16)[2] is False
    assert run(*args, 1)[2] is True
    want = _reference(segment, terms, stats, params, None, 500, 0.0)
    assert _pruned(segment, terms, stats, params, None, 500, 0.0, 16) == want


def test_maxscore_is_not_tried_when_every_posting_would_need_a_look_up() -> None:
    """With a k-th score carried in, one essential term whose smallest weight plus the other
    terms' bests reach it: every posting would be looked up, so MaxScore hands over at once."""
    from ragloom.lexical import maxscore

    hopeless = maxscore.hopeless  # compiled by the fixture
    order = np.array([1, 0, 2], np.int64)  # weakest first
    prefix = np.array([0.0, 1.0, 2.0, 5.0])  # the strongest term's best is 3.0
    count = np.full(3, 10_000, np.int64)
    wmin = np.array([0.1, 0.1, 1.0])  # the strongest term (2) weighs at least 1.0
    assert hopeless(order, prefix, wmin, count, 2.5, 16)  # 1.0 + 2.0 >= 2.5
    assert not hopeless(order, prefix, wmin, count, 3.5, 16)  # 1.0 + 2.0 < 3.5
    assert not hopeless(order, prefix, wmin, count, 1.5, 16)  # two essential terms
    assert not hopeless(order, prefix, wmin, count, 0.0, 16)  # no k-th score yet
    assert not hopeless(order, prefix, wmin, count, 2.5, 1)  # MaxScore never gives up
    short = np.full(3, 2 * maxscore.ALLOWANCE, np.int64)
    assert not hopeless(order, prefix, wmin, short, 2.5, 16)  # few postings: it may try
    # wired through the kernel: the same call completes or hands over on the minima alone
    rng = np.random.default_rng(3)
    segment = _segment(rng, 6000, vocab=2000)
    terms, params = [0, 1, 2], BM25Params()
    stats = _stats(segment, terms)
    want = _reference(segment, terms, stats, params, None, 10, 0.0)
    theta = min(want[1])
    lo, hi, address, _, bmax, boff = _maxscore_inputs(segment, terms, stats, params)
    mask, run = np.zeros(1, np.bool_), kernels._kernels.get()["maxscore"]
    for wmin, done in ((np.zeros(3), True), (np.full(3, theta), False)):
        unread = (np.zeros(3, np.int64), np.zeros(3))
        args = (segment.docs, lo, hi, address, wmin, unread, bmax, boff, mask, False, 10, theta)
        args = (*args, 16)
        assert run(*args)[2] is done


def test_very_common_terms_read_by_chunk_number_score_the_same() -> None:
    """A term in more than half the chunks is looked up by chunk number (its weights spread
    over the segment, 0.0 where absent): the same chunks and scores as seeking its postings,
    and as scoring every match, with a k-th score carried in or not, deletes or not."""
    rng = np.random.default_rng(11)
    segment = _segment(rng, 8000, vocab=2000)
    params = BM25Params()
    for terms in ([0, 1, 2], [2, 0, 1, 7], [0, 0, 3], [1, 40, 0]):
        assert 2 * segment.df(terms[0]) > segment.n  # the path under test is taken
        for eligible in (None, rng.random(segment.n) > 0.1):
            stats = _stats(segment, terms, eligible)
            for k in (1, 10, 100):
                want = _reference(segment, terms, stats, params, eligible, k, 0.0)
                theta = float(np.median(want[1]))
                carried = _reference(segment, terms, stats, params, eligible, k, theta)
                for share in (1, 16):
                    assert _pruned(segment, terms, stats, params, eligible, k, 0.0, share) == want
                    got = _pruned(segment, terms, stats, params, eligible, k, theta, share)
                    assert got == carried
                    indexes = [segment.term_index(t) for t in terms]
                    ranges = [(int(segment.ptr[i]), int(segment.ptr[i + 1])) for i in indexes]
                    weights = [term_weights(segment, stats, params, t)[1] for t in terms]
                    maxima = [term_facts(segment, stats, params, t).maxima for t in terms]
                    docs, scores = kernels.score_top_pruned(
                        segment.docs,
                        ranges,
                        weights,
                        maxima,
                        segment.n,
                        eligible,
                        k,
                        0.0,
                        share,
                        dense=[None] * len(terms),
                    )  # seeking every term's postings instead
                    order = np.argsort(docs, kind="stable")
                    assert (docs[order].tolist(), scores[order].tolist()) == want


def test_maxscore_is_tried_only_for_postings_mostly_read_by_chunk_number(monkeypatch) -> None:
    """A segment's query goes to MaxScore (share > 0) when at most 1 in MAXSCORE_WALKED of its
    postings belong to terms in at most half the chunks, else window by window (share 0);
    the common terms' weights by chunk number are built for MaxScore alone."""
    monkeypatch.setattr(topk, "PRUNE_WORK", 0)
    rng = np.random.default_rng(11)
    segment = _segment(rng, 6000, vocab=3000)
    counts = {t: len(segment.postings(t)[0]) for t in range(3000)}
    common = [t for t, c in counts.items() if 2 * c > segment.n]  # read by chunk number
    rare = [t for t, c in counts.items() if 0 < c * topk.MAXSCORE_WALKED < segment.n // 8]
    mid = [t for t, c in counts.items() if segment.n // 10 < c < segment.n // 3]
    assert len(common) >= 2 and rare and mid  # what the test needs of the corpus
    shares, by_chunk = [], []
    real = kernels.score_top_pruned

    def spy(*args, **kw):
        shares.append(args[8])
        by_chunk.append([x is not None for x in args[10]])
        return real(*args, **kw)

    monkeypatch.setattr(kernels, "score_top_pruned", spy)
    for terms, tried in (
        (common[:2], True),  # only very common words
        (common[:2] + rare[:1], True),  # a rare word's few postings among them
        (common[:1] + mid[:2], False),  # a very common word among mid-frequency ones
        (mid[:3], False),
    ):
        shares.clear()
        by_chunk.clear()
        segment.cache.clear()
        stats = _stats(segment, terms)
        got = search([Target(segment, None)], terms, 10, stats, BM25Params())
        assert shares == [topk.MAXSCORE_SHARE if tried else 0], (terms, tried)
        assert by_chunk == [[tried and t in common for t in terms]]
        built = {key[1] for key in segment.cache if key[0] == "by_chunk"}
        assert built == ({t for t in terms if t in common} if tried else set())
        want = search([Target(segment, None)], terms, 10, stats, BM25Params(), prune=False)
        assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist()


@pytest.mark.parametrize("k1,b", [(0.9, 0.4), (1.2, 0.75), (2.0, 0.0), (0.0, 1.0), (1.5, 1.0)])
def test_compiled_weights_equal_numpys_to_the_last_bit(k1: float, b: float, monkeypatch) -> None:
    """A term's facts from the compiled pass (one pass, the segment's length norms read by
    chunk) are numpy's, bit for bit, on a varied segment: `bm25_weights`' weights, the
    maxima of `np.maximum.reduceat` over blocks, the minimum, the weights by chunk number for
    a term in more than half the chunks (`common`)."""
    from ragloom.lexical.bm25 import bm25_weights
    from ragloom.lexical.term_weights import DENSE_SHARE, length_norms, weights_by_chunk

    rng = np.random.default_rng(int(k1 * 10 + b * 100))
    segment = _segment(rng, 3000, vocab=400)
    params = BM25Params(k1=k1, b=b)
    stats = Stats({t: bm25_idf(segment.df(t), segment.n) for t in range(400)}, 23.7)
    dense_terms = 0
    for term in [*range(0, 400, 7), 1, 2, 3]:
        docs, tfs = segment.postings(term)
        if not len(docs):
            continue
        numpy_weights = bm25_weights(
            tfs.astype(np.float64), segment.lengths[docs], stats.idf[term], stats.avgdl, params
        )
        numpy_maxima = np.maximum.reduceat(numpy_weights, np.arange(0, len(docs), 128))
        numpy_dense = np.zeros(segment.n)
        numpy_dense[docs] = numpy_weights
        dense = len(docs) > DENSE_SHARE * segment.n
        dense_terms += dense
        norm = length_norms(segment, stats, params)
        weights, maxima, least = kernels.weigh(docs, tfs, norm, stats.idf[term], k1)
        assert weights.tobytes() == numpy_weights.tobytes()
        assert maxima.tobytes() == numpy_maxima.tobytes()
        assert least == float(numpy_weights.min())
        facts = term_facts(segment, stats, params, term)  # what every search reads
        assert facts.weights.tobytes() == numpy_weights.tobytes()
        assert facts.maxima.tobytes() == numpy_maxima.tobytes() and facts.least == least
        assert facts.common == dense and facts.docs.tobytes() == docs.tobytes()
        by_chunk = weights_by_chunk(segment, stats, params, term)
        assert by_chunk.tobytes() == numpy_dense.tobytes()
    assert dense_terms >= 2, "the segment must have terms in more than half its chunks"
    compiled = {key: value for key, value in segment.cache.items() if key[0] == "facts"}
    segment.cache.clear()
    monkeypatch.setattr(kernels, "ready", lambda: False)  # a small index: numpy builds them
    for key, facts in compiled.items():
        by_numpy = term_facts(segment, stats, params, key[1])
        assert by_numpy.span == facts.span and by_numpy.least == facts.least
        for name in ("docs", "weights", "maxima"):
            assert getattr(by_numpy, name).tobytes() == getattr(facts, name).tobytes()
        assert by_numpy.common == facts.common
