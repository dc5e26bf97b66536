"""Forward postings: compact encoding round-trips, and the batch encoder writes the same bytes."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ragloom.segments.postings import Postings, count_postings, decode_many, encode_many

chunk = st.dictionaries(st.integers(0, 2**32 - 1), st.integers(1, 2**20), max_size=40)


def _postings(pairs: dict[int, int]) -> Postings:
    ids = sorted(pairs)
    return Postings(np.array(ids, np.uint32), np.array([pairs[i] for i in ids], np.uint32))


@settings(max_examples=200, deadline=None)
@given(st.lists(chunk, max_size=30))
def test_encoding_round_trips_and_batches_match(chunks) -> None:
    postings = [_postings(c) for c in chunks]
    assert encode_many(postings) == [p.to_bytes() for p in postings]
    ids, tfs, counts = decode_many(encode_many(postings))
    assert counts.tolist() == [len(p.term_ids) for p in postings]
    flat = [int(t) for p in postings for t in p.term_ids]
    assert ids.tolist() == flat and tfs.tolist() == [int(f) for p in postings for f in p.tfs]
    for p in postings:
        back = Postings.from_bytes(p.to_bytes())
        assert back.term_ids.tolist() == p.term_ids.tolist()
        assert back.tfs.tolist() == p.tfs.tolist()
        assert back.length == p.length


def test_counting_terms() -> None:
    vocab = {"key": 3, "silver": 1, "door": 2}
    got = count_postings([["silver", "key", "key"], [], ["door"]], vocab)
    assert [p.term_ids.tolist() for p in got] == [[1, 3], [], [2]]
    assert [p.tfs.tolist() for p in got] == [[1, 2], [], [1]]
    assert len(Postings.from_bytes(got[0].to_bytes()).term_ids) == 2
