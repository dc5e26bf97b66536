"""Forward postings: compact encoding round-trips, and the flat batch encoder the writes use
(`encode_flat`) writes the same bytes."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ragloom.segments.postings import Postings, count_ids, decode_many, encode_flat

chunk = st.dictionaries(st.integers(0, 2**32 - 1), st.integers(1, 2**20), max_size=40)


def _postings(pairs: dict[int, int]) -> Postings:
    ids = sorted(pairs)
    return Postings(np.array(ids, np.uint32), np.array([pairs[i] for i in ids], np.uint32))


@settings(max_examples=200, deadline=None)
@given(st.lists(chunk, max_size=30))
def test_encoding_round_trips_and_batches_match(chunks) -> None:
    postings = [_postings(c) for c in chunks]
    flat_ids = np.array([t for p in postings for t in p.term_ids], np.uint32)
    flat_tfs = np.array([f for p in postings for f in p.tfs], np.uint32)
    lengths = np.array([len(p.term_ids) for p in postings], np.int64)
    encoded = encode_flat(flat_ids, flat_tfs, lengths)
    assert encoded == [p.to_bytes() for p in postings]
    ids, tfs, counts = decode_many(encoded)
    assert counts.tolist() == [len(p.term_ids) for p in postings]
    flat = [int(t) for p in postings for t in p.term_ids]
    assert ids.tolist() == flat and tfs.tolist() == [int(f) for p in postings for f in p.tfs]
    for p in postings:
        back = Postings.from_bytes(p.to_bytes())
        assert back.term_ids.tolist() == p.term_ids.tolist()
        assert back.tfs.tolist() == p.tfs.tolist()
        assert back.length == p.length


def test_counting_terms() -> None:
    chunks = [[1, 3, 3], [], [2]]  # "silver key key", nothing, "door": term ids, repeats kept
    lengths = np.array([len(c) for c in chunks], np.int64)
    ids, tfs, counts = count_ids(np.array([t for c in chunks for t in c], np.int64), lengths)
    assert counts.tolist() == [2, 0, 1]
    assert ids.tolist() == [1, 3, 2] and tfs.tolist() == [1, 2, 1]
    first = encode_flat(ids, tfs, counts)[0]
    assert Postings.from_bytes(first).term_ids.tolist() == [1, 3]
