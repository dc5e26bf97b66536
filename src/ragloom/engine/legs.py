"""A collection's legs for one search, bound to one snapshot, and the functions that run them:
the lexical leg (BM25, or BM25 with RM3 feedback when PRF is on) and the dense leg (the query
embedded once per model), each a query in the leg's own form (terms, a vector) asked of the
collection's reader, which answers with row ids and scores (`ragloom.store.base`). `Legs`
holds values only (the reader, the analyzer, the model, the settings); which legs run and how
deep (`plan_legs`, `tie_depth`) and what runs them is here, and what the answers become
(fusion, the controls) is `ragloom.retrieval.ranking`'s."""

from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ragloom.contract.options import MAX_TOP_K
from ragloom.embedding import Embedder
from ragloom.embedding.floors import dense_floor_of
from ragloom.engine.beside import Beside
from ragloom.engine.embedders import Embedders, QueryVectors
from ragloom.engine.services import SearchServices
from ragloom.errors import EmbeddingError, FilterTypeMismatch, NeedsVectors, NotFound, worded
from ragloom.expansion.rm3 import rm3_query
from ragloom.filters import COMPARISONS, FilterNode, leaves, mistyped
from ragloom.lexical import BM25Params, bm25_ceiling, bm25_idf
from ragloom.retrieval.adaptive import Ranked
from ragloom.retrieval.pipeline import tie_score
from ragloom.retrieval.ranking import (
    LegAnswers,
    LegPlan,
    Ranking,
    needs_metadata,
    needs_vectors,
    rank_answers,
)
from ragloom.retrieval.search_options import SearchOptions
from ragloom.store.base import CollectionReader, DenseQuery, LexicalQuery, Snapshot
from ragloom.text import Tokenizer, analyzer_for
from ragloom.timing import timed

DEFAULT_COLLECTION = "default"
# A filtered hybrid search runs its legs side by side when the filter leaves at least this
# many live chunks (hybrid, ms p50 in line / side by side, 100k: 1 % 1.04-1.08 / 1.10-1.15,
# 2 % 1.34 / 1.18, 5 % 2.13 / 1.60, 10 % 3.13 / 2.23; 1M, 1 %: 5.10 / 3.39).
BESIDE_ELIGIBLE = 2_000


@dataclass(frozen=True)
class Legs:
    """One collection of a snapshot as one search reads it: its reader, the search's options
    as applied (with the collection's own defaults), the analyzer and BM25 parameters of the
    lexical leg, the model of the dense leg (None: no dense leg), the query vectors of the
    request, the model's dense-only floor and the collection's fusion profile."""

    snapshot: Snapshot
    reader: CollectionReader
    options: SearchOptions
    tokenizer: Tokenizer
    bm25: BM25Params
    title_weight: int
    embedder: Embedder | None
    vectors: QueryVectors
    dense_floor: float | None = None
    profile: dict[str, Any] | None = None
    metadata: dict[int, dict[str, Any]] = field(default_factory=dict)  # read so far, by row


def open_legs(
    snap: Snapshot,
    options: SearchOptions,
    collection: str,
    vectors: QueryVectors,
    models: Embedders,
    location: str,
) -> Legs | None:
    """A collection's legs in `snap` for a search with `options` (any query text: variants
    and follow-ups run on the same legs). None for the default collection of a new index."""
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
    embedder = None  # a lexical search needs no model: none is rebuilt, loaded or checked
    if options.mode != "lexical":
        embedder = models.for_collection(collection, stored_model, reader.size() > 0)
    return Legs(
        snap,
        reader,
        options,
        analyzer_for(config.tokenizer),
        options.bm25_for(config.bm25),
        config.title_weight,
        embedder,
        vectors,
        dense_floor_of(stored_model),
        config.fusion_profile or None,
    )


def rank_texts(
    legs: Legs, texts: Sequence[str], options: SearchOptions, services: SearchServices
) -> list[Ranking]:
    """Each query text's ranking (the query and its variants): several side by side on the
    services' threads, one in this thread."""
    if len(texts) == 1:
        return [rank_text(legs, texts[0], options)]
    return services.map(lambda text: rank_text(legs, text, options), texts)


def rank_text(legs: Legs, text: str, options: SearchOptions) -> Ranking:
    """One query text's ranking (the query, a variant, a follow-up): the legs its options
    ask for (`plan_legs`), run in the snapshot, then fused (`ragloom.retrieval.ranking`)."""
    plan = plan_legs(text, options, legs.embedder is not None)
    answers = leg_answers(legs, text, plan, options)
    preferences = None
    if options.preferences and answers.dense is not None and answers.lexical is not None:
        rows = [*answers.lexical[0].tolist(), *answers.dense[0].tolist()]
        preferences = preference_scores(options, metadata_of(legs, rows))
    if plan.mode != "lexical":
        answers.pending = legs.reader.pending()
    answers.missing = legs.reader.missing_shards()
    return rank_answers(plan, answers, options, legs.dense_floor, legs.profile, preferences)


def plan_legs(query: str, options: SearchOptions, has_dense: bool) -> LegPlan:
    """The legs `options` ask for over a collection with (or without) vectors, and their
    depth: the pool the controls after fusion need when they may reorder, or a hybrid
    search's, else the top k itself."""
    mode = options.mode or ("hybrid" if has_dense else "lexical")
    if mode != "lexical" and not has_dense:
        raise NeedsVectors(
            f"{mode} search needs vectors, and this collection has none",
            hints=worded("give it vectors with {reembed}, or search with {lexical}"),
        )
    if not asks_anything(query):  # no leg has anything to match (a dense model without a
        return LegPlan(mode, 0)  # floor ranked every chunk for "???", at cosine about 0)
    if mode == "hybrid" or options.reorders:
        return LegPlan(mode, options.pool_depth)
    k = options.top_k  # one row past the cut: whether it ties with the k-th
    return LegPlan(mode, min(k + 1, MAX_TOP_K), k)


def asks_anything(query: str) -> bool:
    """False for a query of only spaces and punctuation ("???", "-- //"): no word, number
    or symbol (emoji, currency) a leg could match."""
    return any(ch.isalnum() or unicodedata.category(ch) in ("So", "Sc", "Sm") for ch in query)


def tie_depth(scores: Any, k: int, depth: int, limit: int = MAX_TOP_K) -> int | None:
    """How deep to fetch a leg again when its answer at `depth` may end inside a tie with
    its k-th score (so that the top k breaks the tie by stable key, not by the rows the
    store had first); None when the answer holds every row tied with the k-th."""
    if not len(scores) == depth < limit or len(scores) <= k:
        return None  # every row the leg holds, or none past the k-th
    if tie_score(float(scores[-1])) != tie_score(float(scores[k - 1])):
        return None
    return min(depth * 4, limit)


def leg_answers(legs: Legs, text: str, plan: LegPlan, options: SearchOptions) -> LegAnswers:
    """The answers of the legs `plan` runs: a hybrid search's lexical leg on another core
    while this thread embeds the query and runs the dense leg (`runs_beside`), one embedding
    error kept rather than raised (the search then answers from its lexical leg)."""
    if plan.depth == 0:
        return LegAnswers()
    if plan.mode == "lexical":
        lexical, ceiling = lexical_side(legs, text, plan, options)
        return LegAnswers(lexical, None, ceiling)
    legs.reader.prepare_dense()  # (a first search: its graphs, while the model loads)
    if plan.mode == "dense":
        return LegAnswers(None, answer(legs, query_vector_of(legs, text), plan, options))
    beside = runs_beside(legs, text, options)
    with Beside(lambda: lexical_side(legs, text, plan, options), start=beside) as other:
        try:
            dense, failed = answer(legs, query_vector_of(legs, text), plan, options), None
        except EmbeddingError as exc:
            dense, failed = None, exc
        lexical, ceiling = other.result()
    return LegAnswers(lexical, dense, ceiling, failed)


def lexical_side(
    legs: Legs, text: str, plan: LegPlan, options: SearchOptions
) -> tuple[Ranked, float | None]:
    """The lexical leg's answer for the text's terms, and the query's BM25 ceiling."""
    terms = legs.tokenizer.terms(text)
    found = answer(legs, terms, plan, options)
    with timed("lexical"):
        return found, query_ceiling(legs.reader, terms, legs.bm25)


def query_vector_of(legs: Legs, text: str) -> np.ndarray:
    """The query's vector (embedded once per model and request; raises `EmbeddingError`)."""
    with timed("dense"):
        return legs.vectors.get(legs.embedder, text)  # type: ignore[arg-type]


def answer(
    legs: Legs, asked: list[str] | np.ndarray, plan: LegPlan, options: SearchOptions
) -> Ranked:
    """One leg's rows and scores, best first, for the query's terms (lexical) or vector
    (dense); a single leg cut at top k is fetched again deeper while its answer may end
    inside a tie with the k-th (`tie_depth`)."""
    depth = plan.depth
    while True:
        found = search_leg(legs, asked, depth, options)
        deeper = tie_depth(found[1], plan.exact, depth) if plan.exact else None
        if deeper is None:
            return found
        depth = deeper


def search_leg(
    legs: Legs, asked: list[str] | np.ndarray, depth: int, options: SearchOptions
) -> Ranked:
    """The reader's top `depth` for the query's terms or vector, with the search's filter."""
    node, key = options.filter_node, options.filter_key
    if isinstance(asked, np.ndarray):
        with timed("dense"):
            return legs.reader.dense(DenseQuery(asked, node, key), depth)
    with timed("lexical"):
        if options.expand == "prf":
            return feedback_search(legs, asked, depth, options)
        return legs.reader.lexical(LexicalQuery(asked, legs.bm25, node, key), depth)


def feedback_search(legs: Legs, terms: list[str], depth: int, options: SearchOptions) -> Ranked:
    """The lexical leg with RM3 pseudo-relevance feedback (`options.prf`): search, take the
    best `fb_docs` chunks' index terms (their text's terms plus the title's, weighted as at
    ingest) with their document frequencies, expand the query (`expansion.rm3`), search
    again with the expanded query's term weights."""
    reader, params = legs.reader, options.prf
    query = LexicalQuery(terms, legs.bm25, options.filter_node, options.filter_key)
    if not terms:
        return reader.lexical(query, depth)
    rows, scores = reader.lexical(query, params.fb_docs)
    if not len(rows):
        return rows, scores
    chunks = legs.snapshot.chunks(rows.tolist())
    counts = []
    for row in rows.tolist():
        chunk = chunks[row]
        words = legs.tokenizer.terms(chunk.text)
        if chunk.title:
            words += legs.tokenizer.terms(chunk.title) * legs.title_weight
        counts.append(dict(Counter(words)))
    vocabulary = sorted({t for c in counts for t in c} | set(terms))
    df, n_docs = reader.document_frequencies(vocabulary)
    expanded = rm3_query(terms, list(zip(scores.tolist(), counts)), df, n_docs, params)
    ordered = list(expanded)
    weighted = replace(query, terms=ordered, weights=[expanded[t] for t in ordered])
    return reader.lexical(weighted, depth)


def runs_beside(legs: Legs, text: str, options: SearchOptions) -> bool:
    """Whether a hybrid search's legs are worth a second core (`ragloom.engine.beside`:
    the lexical leg there): a query a service must embed (the lexical leg scores while it
    answers) or a local model still loading (a process's first search: the model loads on
    its own thread), or a vector at hand searched among at least `BESIDE_ELIGIBLE` chunks. A
    local model embedding the query uses every core itself, and a filter leaving fewer chunks
    makes both legs short: the thread costs more than it overlaps (SciFact, local model:
    0.95x; 100k, 1 % filter: 1.10-1.15 ms beside against 1.04-1.08)."""
    embedder = legs.embedder
    assert embedder is not None  # (a hybrid search)
    if legs.vectors.waits(embedder, text):
        return embedder.remote or not embedder.ready()
    if options.filter_node is None:
        return True
    count = legs.reader.eligible_count(options.filter_node, options.filter_key)
    return count is not None and count >= BESIDE_ELIGIBLE


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


def metadata_of(legs: Legs, rows: Sequence[int]) -> dict[int, dict[str, Any]]:
    """The rows' metadata, each row read once per search."""
    known = legs.metadata
    missing = [row for row in dict.fromkeys(rows) if row not in known]
    if missing:
        found = legs.reader.metadata(missing)
        known.update((row, found.get(row, {})) for row in missing)
    return {row: known[row] for row in rows}


def preference_scores(
    options: SearchOptions, metadata: dict[int, dict[str, Any]]
) -> dict[int, float]:
    """row -> share of the `prefer` filters its metadata matches."""
    rules = options.preferences
    return {
        row: sum(rule(fields) for rule in rules) / len(rules) for row, fields in metadata.items()
    }


def control_data(
    legs: Legs, rows: list[int], options: SearchOptions
) -> tuple[dict[int, dict[str, Any]] | None, dict[int, np.ndarray] | None]:
    """What the controls after fusion read of the candidates, when the options ask: their
    metadata (boosts, caps) and vectors (MMR; None without stored vectors)."""
    metadata = metadata_of(legs, rows) if needs_metadata(options) else None
    vectors = None
    if needs_vectors(options) and legs.reader.config.embedding:
        vectors = dict(zip(rows, legs.reader.vectors(rows)))
    return metadata, vectors


def keys_of(legs: Legs, rows: Sequence[int]) -> dict[int, tuple[str, int]]:
    """Each row's stable key, which orders tied rows: (document id, chunk number)."""
    return {row: (c.document_id, c.n) for row, c in legs.snapshot.chunks(rows).items()}
