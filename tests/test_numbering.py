"""Term numbers: what indexing hands the store instead of per-chunk lists of strings.

`Tokenizer.numbered` must name exactly the terms the analyzer gives (the reference one
included), in every configuration, when the word cache fills and is cleared mid-batch, and
when a numbering is started afresh between batches."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragloom.evaluation.beir import load_beir
from ragloom.text import Tokenizer, TokenizerConfig
from ragloom.text import tokenize as tokenize_module
from ragloom.text.numbering import ChunkTerms, TermNumbers

from . import reference_tokenize as reference
from .conftest import shared_dataset
from .test_tokenize_equivalence import CONFIGS, ascii_text, mixed_text, words_text

texts_strategy = st.lists(st.one_of(ascii_text, mixed_text, words_text), min_size=1, max_size=6)


def numbered_lists(tokenizer: Tokenizer, texts: list[str]) -> list[list[str]]:
    """Each text's terms, named from the flat numbers `numbered` gives."""
    numbers, counts, names = tokenizer.numbered(texts)
    assert len(counts) == len(texts) and int(counts.sum()) == len(numbers)
    bounds = np.concatenate(([0], np.cumsum(counts))).tolist()
    flat = names.names(numbers.tolist())
    return [flat[lo:hi] for lo, hi in zip(bounds[:-1], bounds[1:])]


def reference_for(config: TokenizerConfig) -> reference.Tokenizer:
    return reference.Tokenizer(reference.TokenizerConfig.from_dict(config.to_dict()))


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: repr(c.to_dict()))
@settings(max_examples=60, deadline=None)
@given(batches=st.lists(texts_strategy, min_size=1, max_size=3), limit=st.sampled_from([3, 10**9]))
def test_numbers_name_the_terms_of_the_reference_analyzer(
    config: TokenizerConfig, batches: list[list[str]], limit: int
):
    fast, old = Tokenizer(config), reference_for(config)
    with mock.patch.object(tokenize_module, "_CACHE_LIMIT", limit):
        for texts in batches * 2:  # twice: the second pass is served by the caches
            assert numbered_lists(fast, texts) == [old.terms(t) for t in texts]


def test_a_full_numbering_starts_afresh_between_batches_only():
    tokenizer = Tokenizer()
    with mock.patch.object(tokenize_module, "_CACHE_LIMIT", 4):
        first = numbered_lists(tokenizer, ["alpha beta gamma delta epsilon zeta eta theta"])
        before = tokenizer.numbers
        assert len(before) > 4  # the batch finished with the numbering it began with
        assert first[0][:2] == ["alpha", "beta"]
        second = numbered_lists(tokenizer, ["alpha iota"])
    assert tokenizer.numbers is not before
    assert second == [["alpha", "iota"]]


def test_term_numbers_are_stable_and_zero_is_no_term():
    names = TermNumbers()
    assert names.number(["a", "b", "a", ""]) == [1, 2, 1, 0]
    assert names.number(["c", "b"]) == [3, 2]
    assert names.names([3, 1]) == ["c", "a"]


def test_chunk_terms_from_lists_round_trip():
    lists = [["fox", "dog", "fox"], [], ["dog"]]
    terms = ChunkTerms.from_lists(lists)
    assert len(terms) == 3
    assert terms.lengths.tolist() == [3, 0, 1]
    assert terms.lists() == lists
    with pytest.raises(ValueError, match="add up"):
        ChunkTerms(np.array([1, 2]), np.array([1]), terms.names)


@pytest.mark.parametrize("name", ["scifact", "cranfield"])
def test_numbers_match_terms_on_the_shared_collections(name: str):
    tokenizer, old = Tokenizer(), reference_for(TokenizerConfig())
    texts = [doc.text for doc in load_beir(shared_dataset(name)).iter_corpus()]
    for start in range(0, len(texts), 512):
        batch = texts[start : start + 512]
        assert numbered_lists(tokenizer, batch) == [old.terms(t) for t in batch]


def test_a_batch_that_fails_half_way_leaves_no_placeholder_behind():
    tokenizer, old = Tokenizer(), reference_for(TokenizerConfig())
    with pytest.raises(AttributeError):
        tokenizer.numbered(["brand new words here", None])  # type: ignore[list-item]
    texts = ["brand new words here", "words anew"]
    assert numbered_lists(tokenizer, texts) == [old.terms(t) for t in texts]


def test_new_stop_words_are_dropped_and_counts_follow():
    tokenizer = Tokenizer()
    numbers, counts, names = tokenizer.numbered(["the cat", "of and the", "", "a dog the end"])
    assert counts.tolist() == [1, 0, 0, 2]
    assert names.names(numbers.tolist()) == ["cat", "dog", "end"]


@pytest.mark.parametrize("title_weight", [0, 1, 3])
def test_chunk_terms_are_each_chunks_terms_then_its_titles(title_weight: int):
    from ragloom.engine.chunks import chunk_terms
    from ragloom.types import ChunkSpan, Document

    tokenizer = Tokenizer()
    prepared = [
        (Document("a", "x", title="Silver Keys"), [ChunkSpan("the heron flies", 0, 15)]),
        (Document("b", "x"), [ChunkSpan("forged keys", 0, 11), ChunkSpan("of the", 12, 18)]),
        (Document("c", "x", title="Empty body"), []),
        (Document("d", "x", title=""), [ChunkSpan("tide and moor", 0, 13)]),
        (Document("e", "x", title="The Smith"), [ChunkSpan("", 0, 0), ChunkSpan("anvil", 1, 6)]),
    ]
    terms = chunk_terms(prepared, tokenizer, title_weight)
    expected = [
        tokenizer.terms(span.text)
        + (tokenizer.terms(doc.title) if doc.title else []) * title_weight
        for doc, spans in prepared
        for span in spans
    ]
    assert terms.lists() == expected
    assert terms.lengths.tolist() == [len(e) for e in expected]


@pytest.mark.parametrize("split_identifiers", [False, True])
def test_threads_numbering_new_words_at_once_get_their_own_terms(split_identifiers: bool):
    """Ingest analyzes outside the write lock, and one analyzer serves the whole process:
    threads numbering new words at the same time must each get exactly their terms."""
    import threading

    config = TokenizerConfig(split_identifiers=split_identifiers)
    shared = Tokenizer(config)
    rounds, errors = 30, []

    def work(thread: int) -> None:
        plain = Tokenizer(config)  # the reference, one per thread
        try:
            for r in range(rounds):
                # mostly words no thread has seen, some shared with the other thread
                texts = [
                    " ".join(f"w{thread}x{r}y{i}z{j} common{r}q{j}" for j in range(40))
                    for i in range(50)
                ]
                got = numbered_lists(shared, texts)
                want = [plain.terms(text) for text in texts]
                if got != want:
                    errors.append((thread, r))
                    return
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
