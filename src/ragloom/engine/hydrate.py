"""Hydration, the stage after the controls: ranked candidates become hits, each with its
chunk's text, offsets and metadata read from the search's snapshot, its provenance, and
(when explained) what each stage contributed and which query terms its text holds."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ragloom.context import count_tokens
from ragloom.engine.plain import PlainAnswer
from ragloom.retrieval.fusion import effective_weights
from ragloom.retrieval.pipeline import LEXICAL, Candidate
from ragloom.retrieval.search_options import SearchOptions
from ragloom.store.base import CollectionReader, Snapshot
from ragloom.store.records import StoredChunk
from ragloom.text import Tokenizer, analyzer_for
from ragloom.text.highlight import matches
from ragloom.timing import timed
from ragloom.types import Hit


def hits_of(
    snap: Snapshot,
    query: str,
    collection: str,
    candidates: Sequence[Candidate],
    options: SearchOptions,
) -> tuple[list[Hit], int | None]:
    """Hits of ranked candidates from the snapshot, with the query's matched terms when
    explained, and token counts with their total when asked."""
    with timed("hydrate"):
        chunks = _chunks(snap, [c.row_id for c in candidates])
        hits = hydrate(candidates, chunks, options if options.explain else None)
        if hits:  # a search of a fresh index finds no collection, and nothing to mark
            mark_pending(hits, [c.row_id for c in candidates], snap.collection(collection))
        if options.explain and hits:
            tokenizer = analyzer_for(snap.collection(collection).config.tokenizer)
            explain_matches(hits, tokenizer, tokenizer.terms(query))
        if not options.with_tokens:
            return hits, None
        for hit in hits:
            hit.tokens = count_tokens(hit.text)
        return hits, sum(hit.tokens or 0 for hit in hits)


def mark_pending(hits: Sequence[Hit], rows: Sequence[int], reader: CollectionReader) -> None:
    """Say which hits' chunks still wait for their vector (indexed lexically first, or while
    the embedding service was down): only the lexical leg can find them until then."""
    if not hits or not reader.pending():
        return
    vectors = reader.vectors(list(rows))
    for hit, vector in zip(hits, vectors):  # one snapshot: every row became a hit
        if not vector.any():
            hit.pending = True
            if hit.explain is not None:
                hit.explain["vector"] = "pending"


def explanation(cand: Candidate, options: Any) -> dict[str, Any]:
    """Each stage's contribution to a hit's final score, for `explain`."""
    legs = {}
    if cand.lexical_rank is not None:
        legs["lexical"] = {"rank": cand.lexical_rank, "score": cand.lexical_score}
    if cand.dense_rank is not None:
        legs["dense"] = {"rank": cand.dense_rank, "cosine": cand.dense_score}
    fusion: dict[str, Any] = {"method": cand.fused_by or "none (one leg)"}
    if cand.fused_by == "rrf":
        fusion["k"] = options.rrf_k
    elif cand.fused_by == "weighted":
        fusion["normalization"] = options.normalization
    if cand.fusion_detail is not None:  # adaptive: the weights this query used, and why
        detail = cand.fusion_detail
        fusion["weights"] = {"lexical": round(detail.lexical, 4), "dense": round(detail.dense, 4)}
        fusion["why"] = detail.to_dict()
        fusion["shares"] = {
            "lexical": cand.lexical_share,
            "dense": cand.dense_share,
            "estimated": [
                leg
                for leg, rank in (("lexical", cand.lexical_rank), ("dense", cand.dense_rank))
                if rank is None
            ],
        }
    elif cand.fused_by:
        weights = effective_weights(cand.fused_by, options.weights)
        fusion["weights"] = {leg: w for leg, w in weights.items() if leg != "metadata" or w}
    if cand.metadata_score is not None:
        fusion["metadata_score"] = cand.metadata_score
    fusion["score"] = cand.fused_score
    boost = 1.0
    for _, factor in cand.boosts:
        boost *= factor
    steps: dict[str, Any] = {}
    if cand.variants:
        steps["variants"] = [{"variant": v, "rank": r} for v, r in cand.variants]
    if cand.hop is not None:
        steps["hop"] = cand.hop
    if cand.reranked_by is not None:
        steps["rerank"] = {
            "model": cand.reranked_by,
            "score": cand.rerank_score,
            "rank_before": cand.rank_before_rerank,
        }
    return {
        "match": cand.match,
        "legs": legs,
        "fusion": fusion,
        **steps,
        "boosts": [{"rule": label, "factor": factor} for label, factor in cand.boosts],
        "boost_factor": boost,
        "diversity": list(cand.diversity),
        "final_score": cand.score,
    }


def hydrate(
    candidates: Sequence[Candidate], chunks: Mapping[int, StoredChunk], explain: Any = None
) -> list[Hit]:
    """Attach stored chunk data; candidates whose chunk vanished meanwhile are dropped.

    `explain`, when given, is the search's options: each hit then carries its explanation.
    """
    hits: list[Hit] = []
    for cand in candidates:
        chunk = chunks.get(cand.row_id)
        if chunk is None:
            continue
        hits.append(
            _hit(
                len(hits) + 1,
                cand.score,
                chunk,
                cand.match,
                (cand.lexical_rank, cand.lexical_score, cand.dense_rank, cand.dense_score),
                cand.fused_score,
                cand.rerank_score,
                cand.hop,
                explanation(cand, explain) if explain is not None else None,
            )
        )
    return hits


def plain_hits(snap: Snapshot, answer: PlainAnswer, collection: str) -> list[Hit]:
    """The hits of a plain lexical query's top k (`ragloom.engine.plain`): each its chunk
    from the snapshot, its share of the query's ceiling, its BM25 score and rank, and
    whether its vector is pending."""
    with timed("hydrate"):
        chunks = _chunks(snap, answer.rows)
        found = zip(answer.rows, answer.bm25.tolist(), answer.shares)
        hits = [
            _hit(rank, share, chunks[row], LEXICAL, (rank, bm25, None, None), share)
            for rank, (row, bm25, share) in enumerate(found, 1)
        ]
        if hits:
            mark_pending(hits, answer.rows, snap.collection(collection))
        return hits


def _chunks(snap: Snapshot, rows: list[int]) -> dict[int, StoredChunk]:
    chunks = snap.chunks(rows)
    missing = [r for r in rows if r not in chunks]
    if missing:  # cannot happen within one snapshot; fail loudly, never drop hits
        raise RuntimeError(f"snapshot inconsistency: rows {missing[:5]} vanished")
    return chunks


def _hit(
    rank: int,
    score: float,
    chunk: StoredChunk,
    match: str,
    legs: tuple[int | None, float | None, int | None, float | None],
    fused: float | None,
    rerank: float | None = None,
    hop: int | None = None,
    explain: dict[str, Any] | None = None,
) -> Hit:
    """A hit: its rank and score, its chunk, what found it (`legs`: the lexical rank and
    score, the dense rank and cosine) and the later stages' scores."""
    return Hit(  # Hit's fields by position (a third of the keywords' cost)
        rank,
        score,
        chunk.chunk_id,
        chunk.document_id,
        chunk.text,
        chunk.start,
        chunk.end,
        chunk.source,
        chunk.title,
        chunk.metadata,
        chunk.collection,
        match,
        *legs,
        fused,
        rerank,
        hop,
        None,  # tokens (`hits_of` counts them when asked)
        explain,
    )


def explain_matches(hits: Sequence[Hit], tokenizer: Tokenizer, terms: list[str]) -> None:
    """Add to each explained hit the query's `terms` its text holds and where (`highlights`:
    [start, end] offsets into the hit's text of the words that matched)."""
    for hit in hits:
        if hit.explain is not None:
            found, spans = matches(tokenizer, terms, hit.text)
            hit.explain["matched_terms"] = found
            hit.explain["highlights"] = [list(span) for span in spans]
