"""A collection's legs for one search: the lexical leg (BM25, or BM25 with RM3 feedback when
PRF is on), the dense leg (the query embedded once per model), and the metadata and vector
lookups the controls after fusion use, all bound to one snapshot."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ragloom.config import CollectionConfig
from ragloom.embedding import Embedder
from ragloom.embedding.floors import dense_floor_of
from ragloom.engine.embedders import Embedders, QueryVectors
from ragloom.errors import FilterTypeMismatch, NotFound, ShardUnavailable
from ragloom.expansion.rm3 import prf_search
from ragloom.filters import COMPARISONS, FilterNode, leaves, mistyped
from ragloom.lexical import BM25Params, bm25_ceiling, bm25_idf
from ragloom.retrieval.search import Leg, Ranking, SearchOptions
from ragloom.store.base import CollectionReader, Snapshot
from ragloom.text import Tokenizer, analyzer_for
from ragloom.timing import timed

DEFAULT_COLLECTION = "default"
# A filtered hybrid search runs its legs side by side when the filter leaves at least this
# many live chunks (hybrid, ms p50 in line / side by side, 100k: 1 % 1.04-1.08 / 1.10-1.15,
# 2 % 1.34 / 1.18, 5 % 2.13 / 1.60, 10 % 3.13 / 2.23; 1M, 1 %: 5.10 / 3.39).
BESIDE_ELIGIBLE = 2_000


@dataclass(frozen=True)
class Legs:
    """What `rank` needs from one collection of a snapshot."""

    lexical: Leg
    dense: Leg | None
    metadata_of: Callable[[int], dict[str, Any]]
    vectors_of: Callable[[Sequence[int]], np.ndarray] | None
    reader: CollectionReader
    embedder: Embedder | None
    options: SearchOptions  # as applied: the search's, with the collection's defaults
    dense_floor: float | None = None  # the model's floor for dense-only hits (embedding.floors)
    ceiling: Callable[[str], float | None] | None = None  # query -> its BM25 ceiling
    profile: dict[str, Any] | None = None  # the collection's probe profile (adaptive fusion)
    legs_beside: Callable[[str], bool] | None = None  # query -> run the legs side by side?


def collection_legs(
    snap: Snapshot,
    query: str,
    options: SearchOptions,
    collection: str,
    vectors: QueryVectors,
    models: Embedders,
    location: str,
) -> Legs | None:
    """A collection's legs and lookups for `rank` (the legs take the query text, so
    query variants reuse them). None for the default collection of a new index."""
    known = snap.collections()
    if collection not in known:
        if collection == DEFAULT_COLLECTION:
            return None
        raise NotFound(
            f"no collection {collection!r} in {location}",
            f"known collections: {', '.join(sorted(known)) or 'none yet'}",
        )
    reader = snap.collection(collection)
    config = reader.config
    check_filter_kinds(reader, options.filter_node)
    options = options.with_defaults(config.search)  # the collection's own (tuned) defaults
    stored_model = config.embedding
    embedder = models.for_collection(collection, stored_model, reader.size() > 0)
    tokenizer = analyzer_for(config.tokenizer)
    terms_of = query_terms(tokenizer, query)
    bm25 = options.bm25_for(config.bm25)
    node, key = options.filter_node, options.filter_key

    def lexical(text: str, depth: int) -> tuple[np.ndarray, np.ndarray]:
        words = terms_of(text)
        with timed("lexical"):
            if options.expand == "prf":
                return prf_leg(snap, reader, tokenizer, config, words, depth, bm25, options)
            return reader.lexical(words, depth, bm25, node, key)

    def dense(text: str, depth: int) -> tuple[np.ndarray, np.ndarray]:
        with timed("dense"):
            vector = vectors.get(embedder, text)  # type: ignore[arg-type]
            return reader.dense(vector, depth, node, key)

    beside = beside_rule(vectors, embedder, reader, node, key)

    def ceiling(text: str) -> float | None:
        words = terms_of(text)
        return query_ceiling(reader, words, bm25)

    cache: dict[int, dict[str, Any]] = {}

    def metadata_of(row: int) -> dict[str, Any]:
        found = cache.get(row)
        if found is None:
            found = cache[row] = reader.metadata([row]).get(row, {})
        return found

    has_dense = bool(stored_model) and embedder is not None
    return Legs(
        lexical,
        dense if has_dense else None,
        metadata_of,
        reader.vectors if stored_model else None,
        reader,
        embedder if has_dense else None,
        options,
        dense_floor_of(stored_model),
        ceiling,
        config.fusion_profile or None,
        beside if has_dense else None,
    )


def beside_rule(
    vectors: QueryVectors,
    embedder: Embedder | None,
    reader: CollectionReader,
    node: FilterNode | None,
    key: str | None,
) -> Callable[[str], bool]:
    """query -> whether a hybrid search's legs are worth a second core
    (`ragloom.retrieval.beside`: the lexical leg there): a query a service must embed (the
    lexical leg scores while it answers), or a vector at hand searched among at least
    `BESIDE_ELIGIBLE` chunks. A local model embedding the query uses every core itself,
    and a filter leaving fewer chunks makes both legs short: the thread costs more than it
    overlaps (SciFact, local model: 0.95x; 100k, 1 % filter: 1.10-1.15 ms beside against
    1.04-1.08)."""

    def beside(text: str) -> bool:
        if vectors.waits(embedder, text):  # type: ignore[arg-type]
            return bool(getattr(embedder, "remote", False))
        if node is None:
            return True
        count = reader.eligible_count(node, key)
        return count is not None and count >= BESIDE_ELIGIBLE

    return beside


def query_terms(tokenizer: Tokenizer, query: str) -> Callable[[str], list[str]]:
    """text -> its terms, the query's parsed once and only when a leg first needs them (a
    dense search never does); a variant's (expansion, a hop's follow-up) each time."""
    parsed: list[list[str]] = []

    def terms_of(text: str) -> list[str]:
        if text != query:
            return tokenizer.terms(text)
        if not parsed:
            parsed.append(tokenizer.terms(query))
        return parsed[0]

    return terms_of


def check_filter_kinds(reader: CollectionReader, node: FilterNode | None) -> None:
    """FilterTypeMismatch for a comparison with a kind its field never holds here (it would
    quietly match nothing: `{"hives": {"$gt": "five"}}` on a field of numbers)."""
    for leaf in leaves(node) if node is not None else ():
        if leaf.op in COMPARISONS:
            why = mistyped(leaf, reader.field_values(leaf.key))
            if why is not None:
                hint = "compare with a value of the kind the field holds"
                raise FilterTypeMismatch(why, hint)


def query_ceiling(reader: CollectionReader, terms: Sequence[str], params: BM25Params) -> float:
    """The most BM25 a chunk could score for these query terms: a term no live chunk holds
    counts with the idf of a word in no chunk (no hit can match it, so every share is lower)."""
    if not terms:
        return 0.0
    counts, n_chunks = reader.document_frequencies(terms)
    return bm25_ceiling([bm25_idf(counts.get(t, 0), n_chunks) for t in terms], params)


def note_pending(ranking: Ranking, reader: CollectionReader) -> Ranking:
    """Mark a ranking that used vectors while some chunks still wait for theirs."""
    if ranking.mode != "lexical":
        waiting = reader.pending()
        if waiting:
            note = (
                f"{waiting} chunk(s) still wait for vectors (the embedding service failed "
                "when they were indexed); they are found by the lexical leg only"
            )
            ranking.degraded = True
            ranking.reason = f"{ranking.reason}; {note}" if ranking.reason else note
    return ranking


def note_missing(ranking: Ranking, reader: CollectionReader, strict: bool) -> Ranking:
    """Mark a ranking made without some shards of a shard set (`strict`: raise instead)."""
    missing = reader.missing_shards()
    if missing:
        note = "answered without " + "; ".join(missing)
        if strict:
            raise ShardUnavailable(note, "retry once the shard is back, or search without strict")
        ranking.degraded = True
        ranking.reason = f"{ranking.reason}; {note}" if ranking.reason else note
    return ranking


def prf_leg(
    snap: Snapshot,
    reader: CollectionReader,
    tokenizer: Tokenizer,
    config: CollectionConfig,
    terms: list[str],
    depth: int,
    bm25: BM25Params,
    options: SearchOptions,
) -> tuple[np.ndarray, np.ndarray]:
    """The lexical leg with RM3 pseudo-relevance feedback (`options.prf`): the feedback
    chunks' index terms are their text's terms plus the title's, weighted as at ingest."""
    node, key = options.filter_node, options.filter_key

    def feedback_terms(rows: list[int]) -> list[dict[str, float]]:
        chunks = snap.chunks(rows)
        out = []
        for row in rows:
            chunk = chunks[row]
            words = tokenizer.terms(chunk.text)
            if chunk.title:
                words += tokenizer.terms(chunk.title) * config.title_weight
            out.append(dict(Counter(words)))
        return out

    rows, scores, _ = prf_search(
        terms,
        depth,
        lambda words, n: reader.lexical(words, n, bm25, node, key),
        lambda words, weights, n: reader.lexical_weighted(words, weights, n, bm25, node, key),
        feedback_terms,
        reader.document_frequencies,
        options.prf,
    )
    return rows, scores
