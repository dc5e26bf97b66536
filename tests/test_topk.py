"""Pruned BM25 top-k equals scoring every matching chunk: same rows, same scores, same order.
Every test runs twice: with the compiled kernels (numba) and with numpy's pruned paths."""

from __future__ import annotations

import numpy as np
import pytest

from ragloom.compiled import Compiled
from ragloom.lexical.bm25 import BM25Params, bm25_idf
from ragloom.lexical.topk import Stats, Target, search
from ragloom.segments.merge_memory import merge_segments
from ragloom.segments.postings import Postings
from tests.segment_data import build_segment


@pytest.fixture(autouse=True, params=["numpy", "compiled"])
def _prune_everything(monkeypatch, request):
    """Prune even small test segments (in use, small ones are scored exhaustively); once with
    numpy's paths, once with the compiled kernels (`ragloom.lexical.kernels`)."""
    import ragloom.lexical.topk as topk
    from ragloom.lexical import kernels

    monkeypatch.setattr(topk, "SMALL_SEGMENT", 64)
    monkeypatch.setattr(topk, "SMALL_WORK", 0)
    if request.param == "numpy":
        monkeypatch.setattr(kernels, "_kernels", Compiled(lambda njit: None))
        assert not kernels.available()
    else:
        monkeypatch.delenv("RAGLOOM_KERNELS", raising=False)
        monkeypatch.setattr(kernels, "_kernels", Compiled(kernels._build))
        assert kernels.available(), "numba is a dependency: the compiled kernels must load"
    return request.param


def _random_postings(rng: np.random.Generator, n: int, vocab: int) -> list[Postings]:
    """Chunks of Zipf-distributed words (so a few terms are very common)."""
    out = []
    for _ in range(n):
        words = np.minimum(rng.zipf(1.3, size=int(rng.integers(5, 60))), vocab) - 1
        ids, counts = np.unique(words, return_counts=True)
        out.append(Postings(ids.astype(np.uint32), counts.astype(np.uint32)))
    return out


def _segments(rng, sizes, vocab, first_row=1):
    segments, row = [], first_row
    for size in sizes:
        postings = _random_postings(rng, size, vocab)
        rows = np.arange(row, row + size)
        segments.append(build_segment(rows, postings, [{}] * size))
        row += size + int(rng.integers(0, 3))  # gaps: rows deleted before this was built
    return segments


def _stats(targets, terms, live_only=True):
    n, total = 0, 0.0
    df: dict[int, int] = {}
    for target in targets:
        seg = target.segment
        alive = np.ones(seg.n, bool) if target.eligible is None else target.eligible
        n += int(alive.sum())
        total += float(seg.lengths[alive].sum())
        for t in set(terms):
            docs, _ = seg.postings(t)
            df[t] = df.get(t, 0) + int(alive[docs].sum())
    return Stats({t: bm25_idf(df.get(t, 0), n) for t in terms}, total / n), n


def _naive(targets, terms, k, stats, params):
    """Straight from the formula, one chunk at a time."""
    results = []
    for target in targets:
        seg = target.segment
        for doc in range(seg.n):
            if target.eligible is not None and not target.eligible[doc]:
                continue
            score = 0.0
            for t in terms:
                docs, tfs = seg.postings(t)
                hit = np.flatnonzero(docs == doc)
                if len(hit):
                    tf = float(tfs[hit[0]])
                    norm = params.k1 * (1 - params.b + params.b * seg.lengths[doc] / stats.avgdl)
                    score += stats.idf[t] * tf * (params.k1 + 1) / (tf + norm)
            if score > 0:
                results.append((-score, int(seg.rows[doc])))
    results.sort()
    return [r for _, r in results[:k]], [-s for s, _ in results[:k]]


@pytest.mark.parametrize("seed", range(4))
def test_pruned_equals_exhaustive_bit_for_bit(seed: int) -> None:
    rng = np.random.default_rng(seed)
    segments = _segments(rng, [12_000, 4200, 500, 37], vocab=3000)
    targets = []
    for seg in segments:
        eligible = rng.random(seg.n) > 0.1 if seed % 2 else None  # some chunks deleted
        targets.append(Target(seg, eligible))
    params = BM25Params(
        k1=float(rng.choice([0.9, 1.2, 2.0])), b=float(rng.choice([0.0, 0.4, 0.75]))
    )
    for _ in range(15):
        terms = [int(t) for t in np.minimum(rng.zipf(1.2, size=int(rng.integers(1, 7))), 3000) - 1]
        if rng.random() < 0.3:
            terms.append(terms[0])  # a repeated query word counts twice
        stats, _ = _stats(targets, terms)
        for k in (1, 10, 100):
            fast = search(targets, terms, k, stats, params)
            slow = search(targets, terms, k, stats, params, prune=False)
            assert fast[0].tolist() == slow[0].tolist()
            assert fast[1].tolist() == slow[1].tolist()  # exact, not approximate


def test_segments_past_the_kernel_budget_are_pruned_exactly(monkeypatch) -> None:
    """Some segments scored by the kernel, the larger ones pruned: the same top k."""
    import ragloom.lexical.topk as topk

    monkeypatch.setattr(topk, "PRUNE_WORK", 2000)
    rng = np.random.default_rng(21)
    targets = [Target(s, None) for s in _segments(rng, [9000, 3000, 200], vocab=2000)]
    for _ in range(15):
        terms = [int(t) for t in np.minimum(rng.zipf(1.2, size=3), 2000) - 1]
        stats, _ = _stats(targets, terms)
        fast = search(targets, terms, 10, stats, BM25Params())
        slow = search(targets, terms, 10, stats, BM25Params(), prune=False)
        assert fast[0].tolist() == slow[0].tolist()
        assert fast[1].tolist() == slow[1].tolist()


def test_exhaustive_matches_the_formula() -> None:
    rng = np.random.default_rng(7)
    segments = _segments(rng, [300, 120], vocab=200)
    targets = [Target(s, None) for s in segments]
    params = BM25Params()
    for _ in range(10):
        terms = [int(t) for t in rng.integers(0, 50, size=3)]
        stats, _ = _stats(targets, terms)
        rows, scores = search(targets, terms, 10, stats, params, prune=False)
        want_rows, want_scores = _naive(targets, terms, 10, stats, params)
        assert rows.tolist() == want_rows
        assert scores.tolist() == pytest.approx(want_scores, rel=1e-12)


def test_filters_and_selective_filters_keep_exact_results() -> None:
    rng = np.random.default_rng(3)
    seg = _segments(rng, [20_000], vocab=2000)[0]
    params = BM25Params()
    for share in (0.5, 0.01, 0.001):
        eligible = rng.random(seg.n) < share
        targets = [Target(seg, eligible)]
        for _ in range(10):
            terms = [int(t) for t in np.minimum(rng.zipf(1.2, size=3), 2000) - 1]
            stats, _ = _stats([Target(seg, None)], terms)
            fast = search(targets, terms, 10, stats, params)
            slow = search(targets, terms, 10, stats, params, prune=False)
            assert fast[0].tolist() == slow[0].tolist()
            assert fast[1].tolist() == slow[1].tolist()
            assert all(eligible[seg.row_index(np.array([r]))[0]] for r in fast[0].tolist())


def test_a_selective_filter_builds_whole_term_weights_only_for_a_term_met_again() -> None:
    """Right after open, a filter that allows few chunks scores them from the postings at
    those chunks: a term's whole weights (and what derives from them) are built only when it
    is met again, and both answers equal scoring every match, bit for bit."""
    rng = np.random.default_rng(5)
    seg = _segments(rng, [20_000], vocab=2000)[0]
    eligible = rng.random(seg.n) < 0.002
    listed = np.flatnonzero(eligible)
    target = Target(seg, eligible, filtered=True, allowed=len(listed), listed=listed)
    terms = [0, 1, 5, 0]  # very common, common, rarer; a repeat counts twice
    stats, _ = _stats([Target(seg, None)], terms)
    params = BM25Params()

    def built() -> set:
        return {key[:2] for key in seg.cache if key[0] == "facts"}

    first = search([target], terms, 10, stats, params)
    assert built() == set()  # weighed at the listed chunks only
    again = search([target], terms, 10, stats, params)
    assert built() == {("facts", t) for t in set(terms)}
    slow = search([target], terms, 10, stats, params, prune=False)
    for fast in (first, again):
        assert fast[0].tolist() == slow[0].tolist() and len(fast[0]) == 10
        assert fast[1].tolist() == slow[1].tolist()  # exact, not approximate


def test_merging_segments_changes_no_score() -> None:
    rng = np.random.default_rng(11)
    segments = _segments(rng, [900, 700, 50], vocab=500)
    deads = [rng.random(s.n) < 0.2 for s in segments]
    merged = merge_segments(list(zip(segments, deads)), vector_epoch=0, dimension=None)
    params = BM25Params()
    for _ in range(20):
        terms = [int(t) for t in np.minimum(rng.zipf(1.3, size=4), 500) - 1]
        before = [Target(s, ~d) for s, d in zip(segments, deads)]
        after = [Target(merged, None)]
        stats, n = _stats(before, terms)
        stats_after, n_after = _stats(after, terms)
        assert n == n_after and stats == stats_after
        a = search(before, terms, 20, stats, params)
        b = search(after, terms, 20, stats, params)
        assert a[0].tolist() == b[0].tolist() and a[1].tolist() == b[1].tolist()


def test_pruning_reads_fewer_postings(monkeypatch) -> None:
    """Not a timing: count the chunks scored exactly, against the chunks that match (numpy's
    pruning, which serves without numba)."""
    import ragloom.lexical.topk as topk
    from ragloom.lexical import kernels

    monkeypatch.setattr(kernels, "_kernels", Compiled(lambda njit: None))

    rng = np.random.default_rng(5)
    seg = _segments(rng, [40_000], vocab=5000)[0]
    targets = [Target(seg, None)]
    scored = []
    real = topk._score_docs

    def counting(segment, docs, *args):
        scored.append(len(docs))
        return real(segment, docs, *args)

    matching = 0
    topk._score_docs = counting
    try:
        for terms in ([0, 5, 40], [3, 100], [10, 20, 30, 40], [1, 7], [2, 60, 300]):
            stats, _ = _stats(targets, terms)
            search(targets, terms, 10, stats, BM25Params())
            matching += len(np.unique(np.concatenate([seg.postings(t)[0] for t in terms])))
    finally:
        topk._score_docs = real
    assert sum(scored) < matching / 3, (sum(scored), matching)


def test_a_segment_file_reads_back_equal(tmp_path) -> None:
    from ragloom.segments.persist import load_segment
    from tests.segment_data import save_segment

    rng = np.random.default_rng(2)
    postings = _random_postings(rng, 300, 400)
    metadatas = [{"book": int(i % 3), "tags": ["a", "b"][: i % 3]} for i in range(300)]
    vectors = rng.standard_normal((300, 8)).astype(np.float32)
    has = rng.random(300) > 0.2
    seg = build_segment(np.arange(10, 310), postings, metadatas, vectors, has, vector_epoch=3)
    save_segment(seg, tmp_path / "s.seg")
    back = load_segment(tmp_path / "s.seg", "s")
    for name in ("rows", "terms", "ptr", "docs", "tfs", "block_ptr", "block_max_tf", "vectors"):
        assert np.array_equal(getattr(seg, name), getattr(back, name)), name
    assert np.array_equal(seg.lengths, back.lengths)
    assert np.array_equal(seg.block_min_len, back.block_min_len)
    assert back.vector_epoch == 3 and np.array_equal(back.has_vector, has)
    from ragloom.filters import parse_filter

    for spec in ({"book": 1}, {"tags": {"$overlap": ["b"]}}, {"$not": {"tags": {"$exists": True}}}):
        node = parse_filter(spec)
        assert np.array_equal(seg.columns.evaluate(node), back.columns.evaluate(node))


def test_merging_into_a_file_equals_merging_in_memory(tmp_path) -> None:
    from ragloom.segments.merge_file import merge_to_file
    from ragloom.segments.merge_memory import merge_parts
    from ragloom.segments.persist import load_segment
    from ragloom.segments.view import Part

    rng = np.random.default_rng(9)
    parts = []
    row = 1
    for size in (700, 300, 1200):
        postings = _random_postings(rng, size, 900)
        meta = [{"g": int(i % 7), "t": ["x", "y"][: i % 3]} for i in range(size)]
        vectors = rng.standard_normal((size, 6)).astype(np.float32)
        has = rng.random(size) > 0.1
        seg = build_segment(np.arange(row, row + size), postings, meta, vectors, has, 2)
        part = Part(seg).deleting(np.flatnonzero(rng.random(size) < 0.2))
        late = np.flatnonzero(~has)[:5]
        part = part.with_late(late, rng.standard_normal((len(late), 6)).astype(np.float32))
        parts.append(part)
        row += size + 3
    memory = merge_parts(parts, 2, 6)
    written, _ = merge_to_file(parts, 2, 6, tmp_path / "m.seg")
    disk = load_segment(tmp_path / "m.seg", "m")
    assert written == memory.n == disk.n
    for name in ("rows", "terms", "ptr", "docs", "tfs", "block_ptr", "block_max_tf", "vectors"):
        assert np.array_equal(getattr(memory, name), getattr(disk, name)), name
    assert np.array_equal(memory.has_vector, disk.has_vector)
    assert np.array_equal(memory.lengths, disk.lengths)
    assert np.array_equal(memory.block_min_len, disk.block_min_len)
    for i in range(0, memory.n, 97):
        assert memory.columns.row(i) == disk.columns.row(i)


def test_a_segment_without_any_query_term_is_not_scored(monkeypatch, _prune_everything) -> None:
    """A rare-term query finds its terms in few segments (a small tail segment often has none
    of them): those are skipped before the compiled kernel's call, with the same answer."""
    import ragloom.lexical.topk as topk
    from ragloom.lexical import kernels

    with_term = build_segment(
        np.arange(1, 4),
        [Postings(np.array([7], np.uint32), np.array([1], np.uint32))] * 3,
        [{}] * 3,
    )
    without = build_segment(
        np.arange(10, 12),
        [Postings(np.array([8], np.uint32), np.array([2], np.uint32))] * 2,
        [{}] * 2,
    )
    targets = [Target(with_term, None), Target(without, None)]
    stats = Stats({7: bm25_idf(3, 5)}, 1.2)
    calls = []
    for name in ("score_top", "score_top_pruned"):
        original = getattr(kernels, name)
        monkeypatch.setattr(
            kernels, name, lambda *a, _f=original, **k: calls.append(a[0]) or _f(*a, **k)
        )
    rows, scores = topk.search(targets, [7], 10, stats, BM25Params())
    assert rows.tolist() == [1, 2, 3] and len(set(scores.tolist())) == 1
    # compiled: the segment holding term 7 only; numpy's paths call no kernel at all
    assert len(calls) == (1 if _prune_everything == "compiled" else 0)
