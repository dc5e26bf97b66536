"""The two legs in SQL: BM25 from ragloom's postings and statistics, dense with pgvector.

BM25 equals the embedded store's: Lucene's IDF computed here from the snapshot's document
frequencies and live-chunk count (`ragloom.lexical.bm25`), each query term counted as often
as it occurs, k1/b per search, ties to the lower row id. Dense search is exact (one scan of
the collection's vectors) until the collection has an HNSW index; with one, a filter that
leaves few chunks is still searched exactly, others through the index with
`hnsw.iterative_scan` so a filter never starves the top k.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from psycopg import sql

from ragloom.filters import FilterNode
from ragloom.lexical.bm25 import BM25Params, bm25_idf
from ragloom.store.postgres import where as filters

EXACT_LIMIT = 20_000  # eligible chunks up to which a filtered dense search is exact
_NONE = (np.zeros(0, np.int64), np.zeros(0, np.float64))


def filter_sql(reader: Any, node: FilterNode | None) -> sql.Composable | None:
    """The SQL condition of a filter on this collection's chunks (None: no filter)."""
    if node is None:
        return None
    row = reader.row
    cache = reader.snapshot.store.filter_values

    def values_of(fields: tuple[str, ...]) -> list[str]:
        return filters.distinct_values(reader.conn, row.id, row.changed, fields, cache)

    return filters.compile_filter(node, values_of)


def lexical(
    reader: Any,
    terms: Sequence[str],
    k: int,
    params: BM25Params,
    where: FilterNode | None,
    term_weights: Sequence[float] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """BM25 top k (row ids, scores) over live chunks passing `where`; `term_weights` (one per
    term, as PRF-expanded queries give them) scale each term's contribution."""
    row = reader.row
    if k <= 0 or not terms or not row.chunks:
        return _NONE
    counts = query_counts(terms, term_weights)
    found = term_frequencies(reader, list(counts))
    if not found:
        return _NONE
    names = list(found)
    weights = [counts[t] * bm25_idf(found[t], row.chunks) for t in names]
    avgdl = row.total_length / row.chunks
    return scored(reader, scored_query(reader, names, weights, avgdl, k, params, where))


def query_counts(terms: Sequence[str], term_weights: Sequence[float] | None) -> dict[str, float]:
    """How much each distinct query term counts: its repeats, or the sum of its weights."""
    counts: dict[str, float] = {}
    for i, term in enumerate(terms):
        counts[term] = counts.get(term, 0.0) + (
            1.0 if term_weights is None else float(term_weights[i])
        )
    return counts


def term_frequencies(reader: Any, terms: Sequence[str]) -> dict[str, int]:
    """Live chunks of this collection holding each of `terms` (terms none holds left out)."""
    found = reader.conn.execute(
        "SELECT term, df FROM term_stats WHERE collection_id = %s AND term = ANY(%s) AND df > 0",
        (reader.row.id, list(terms)),
    ).fetchall()
    return {t: int(df) for t, df in found}


def scored(
    reader: Any, statement: tuple[sql.Composable, dict[str, Any]]
) -> tuple[np.ndarray, np.ndarray]:
    """The rows and scores `scored_query`'s statement ranks, best first."""
    records = reader.conn.execute(*statement).fetchall()
    if not records:
        return _NONE
    rows = np.array([r[0] for r in records], np.int64)
    scores = np.array([r[1] for r in records], np.float64)
    return rows, scores


def scored_query(
    reader: Any,
    names: Sequence[str],
    weights: Sequence[float],
    avgdl: float,
    k: int,
    params: BM25Params,
    where: FilterNode | None,
) -> tuple[sql.Composable, dict[str, Any]]:
    """The statement (and its values) of the BM25 top k of this collection's chunks, as
    rows (chunk_id, score) best first, for terms whose idf x query weight is given (from
    this collection's statistics, or a whole shard set's: the score of a chunk needs only
    its own postings and these numbers)."""
    row = reader.row
    condition = filter_sql(reader, where)
    join: sql.Composable = sql.SQL("")
    if condition is not None:
        join = sql.SQL(" JOIN chunks c ON c.id = p.chunk_id AND {}").format(condition)
    query = sql.SQL(
        "SELECT p.chunk_id, sum(q.w * (p.tf * %(k1p)s) / (p.tf + %(k1)s * (%(nb)s +"
        " %(b)s * p.length / %(avgdl)s))) AS score"
        " FROM unnest(%(terms)s::text[], %(weights)s::float8[]) AS q(term, w)"
        " JOIN postings p ON p.collection_id = %(c)s AND p.term = q.term{join}"
        " GROUP BY p.chunk_id ORDER BY score DESC, p.chunk_id LIMIT %(k)s"
    ).format(join=join)
    return (
        query,
        {
            "k1p": params.k1 + 1.0,
            "k1": params.k1,
            "nb": 1.0 - params.b,
            "b": params.b,
            "avgdl": avgdl,
            "terms": names,
            "weights": weights,
            "c": row.id,
            "k": k,
        },
    )


def document_frequencies(reader: Any, terms: Sequence[str]) -> tuple[dict[str, int], int]:
    """(live chunks containing each term that any contains, live chunks in all)."""
    return term_frequencies(reader, list(set(terms))), reader.row.chunks


def _dimension(reader: Any) -> int | None:
    value = (reader.row.config.get("embedding") or {}).get("dimension")
    return int(value) if value else None


def dense(
    reader: Any, vector: np.ndarray, k: int, where: FilterNode | None
) -> tuple[np.ndarray, np.ndarray]:
    """Top k (row ids, inner product = cosine of unit vectors) over chunks with vectors."""
    dimension = _dimension(reader)
    if k <= 0 or dimension is None or not reader.row.vectors:
        return np.zeros(0, np.int64), np.zeros(0, np.float32)
    query = np.asarray(vector, np.float32)
    condition = filter_sql(reader, where)
    store = reader.snapshot.store
    indexed = store.indexer.has_index(reader.conn, reader.row.id, dimension)
    exact = not indexed
    if indexed and condition is not None:
        probe = sql.SQL(
            "SELECT count(*) FROM (SELECT 1 FROM chunks WHERE collection_id = %s"
            " AND embedding IS NOT NULL AND {} LIMIT %s) AS e"
        ).format(condition)
        eligible = reader.conn.execute(probe, (reader.row.id, EXACT_LIMIT + 1)).fetchone()[0]
        exact = eligible <= EXACT_LIMIT
    cut = sql.SQL(" AND {}").format(condition) if condition is not None else sql.SQL("")
    if exact:
        records = _exact(reader, query, k, cut)
    else:
        records = _approximate(reader, query, k, cut, dimension, condition is not None)
    if not records:
        return np.zeros(0, np.int64), np.zeros(0, np.float32)
    rows = np.array([r[0] for r in records], np.int64)
    scores = np.array([r[1] for r in records], np.float32)
    order = np.lexsort((rows, -scores))[:k]
    return rows[order], scores[order]


def _exact(reader: Any, query: np.ndarray, k: int, cut: sql.Composable) -> list:
    """Brute force over the eligible vectors (the planner cannot use the HNSW index here:
    the ordering expression is not the indexed one)."""
    statement = sql.SQL(
        "SELECT id, -(embedding <#> %(q)s) AS score FROM chunks"
        " WHERE collection_id = %(c)s AND embedding IS NOT NULL{cut}"
        " ORDER BY score DESC, id LIMIT %(k)s"
    ).format(cut=cut)
    return (
        reader.conn.cursor(binary=True)
        .execute(statement, {"q": query, "c": reader.row.id, "k": k})
        .fetchall()
    )


def _approximate(
    reader: Any, query: np.ndarray, k: int, cut: sql.Composable, dimension: int, filtered: bool
) -> list:
    """Through the collection's HNSW index (a partial expression index, hence the literals)."""
    conn = reader.conn
    conn.execute(sql.SQL("SET LOCAL hnsw.ef_search = {}").format(sql.Literal(max(100, 4 * k))))
    if filtered:
        conn.execute("SET LOCAL hnsw.iterative_scan = strict_order")
    cast = sql.SQL("embedding::vector({})").format(sql.Literal(dimension))
    statement = sql.SQL(
        "SELECT id, -({cast} <#> %(q)s::vector({d})) FROM chunks"
        " WHERE collection_id = {c} AND embedding IS NOT NULL{cut}"
        " ORDER BY {cast} <#> %(q)s::vector({d}) LIMIT %(k)s"
    ).format(cast=cast, d=sql.Literal(dimension), c=sql.Literal(reader.row.id), cut=cut)
    return conn.cursor(binary=True).execute(statement, {"q": query, "k": k}).fetchall()
