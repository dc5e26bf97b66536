"""One search with the steps its options switch on, over one collection's legs:

    query -> expand? -> [rank each variant (legs -> fusion), concurrently] -> merge by chunk
          -> rerank? (best `rerank_depth`) -> refine (boosts, thresholds, diversity, top k)
    hops: each round is the above without rerank; the accumulated chunks are then
          reranked against the original question.

Each step is a function of data: the legs answer as arrays (`ragloom.engine.legs`), fusion,
the controls, the variants' merge, the reranker's and the LLM's decisions are pure functions
or service calls (`ragloom.retrieval`, `ragloom.expansion`); this module reads what they
need from the snapshot and runs them in order. No service is called unless its step is on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ragloom.engine.legs import (
    Legs,
    control_data,
    keys_of,
    rank_text,
    rank_texts,
)
from ragloom.engine.services import SearchServices
from ragloom.errors import EmbeddingError, InputError, LLMError, LLMFailed
from ragloom.expansion.llm import expand_query
from ragloom.llm import LLM
from ragloom.rerank.base import Reranker
from ragloom.retrieval.hops import HopTrace, follow_up, new_in_hop
from ragloom.retrieval.pipeline import Candidate, ordered
from ragloom.retrieval.ranking import Ranking, refine
from ragloom.retrieval.rerank import passage_text, rerank_candidates
from ragloom.retrieval.search_options import SearchOptions
from ragloom.retrieval.variants import merge_variants
from ragloom.timing import timed


@dataclass
class FlowResult:
    """The ranked candidates plus what each step did, and the dense-only floor the fused
    legs had to reach (None: no fusion applied one) with the candidates it dropped."""

    candidates: list[Candidate]
    mode: str
    options: SearchOptions  # as applied (with the collection's own defaults)
    reasons: list[str] = field(default_factory=list)  # why the answer is degraded, if it is
    expansion: dict[str, Any] | None = None
    rerank: dict[str, Any] | None = None
    hops: dict[str, Any] | None = None
    floor: float | None = None
    below_floor: int = 0

    @property
    def degraded(self) -> bool:
        return bool(self.reasons)

    @property
    def reason(self) -> str | None:
        return "; ".join(self.reasons) or None

    @property
    def steps(self) -> dict[str, Any]:
        """What the service steps did ("expansion", "rerank", "hops"): those that ran."""
        done = (("expansion", self.expansion), ("rerank", self.rerank), ("hops", self.hops))
        return {name: value for name, value in done if value is not None}


def check_services(options: SearchOptions, llm: LLM | None, reranker: Reranker | None) -> None:
    """A step switched on without the service it needs is a configuration error."""
    if (options.expand == "llm" or options.hops > 1) and llm is None:
        step = "expand='llm'" if options.expand == "llm" else f"hops={options.hops}"
        raise InputError(f"{step} needs an LLM", "set one with --llm, llm=... or RAGLOOM_LLM")
    if options.rerank and reranker is None:
        raise InputError(
            "rerank needs a reranker", "set one with --rerank, reranker=... or RAGLOOM_RERANKER"
        )


def search_flow(
    query: str,
    legs: Legs | None,
    options: SearchOptions,
    services: SearchServices | None = None,
    llm: LLM | None = None,
    reranker: Reranker | None = None,
) -> FlowResult:
    """Run one search over `legs` with the steps its options (as applied: the legs') switch
    on; no legs (the default collection of a new index) answer with no candidates."""
    if legs is None:
        return FlowResult([], options.mode or "lexical", options)
    options = legs.options
    check_services(options, llm, reranker)
    result = FlowResult([], options.mode or "lexical", options)
    pool = first_round(query, legs, services or SearchServices(), llm, result)
    if options.hops > 1:
        found = hops(query, pool, legs, llm, result)  # type: ignore[arg-type]
        if options.rerank and found:  # the accumulated chunks, against the question
            found = reranked(found, query, legs, reranker, result, len(found))  # type: ignore[arg-type]
            found = refined(legs, found, replace(options, top_k=len(found), diversity=None))
        result.candidates = found
        return result
    if options.rerank:
        depth = max(options.rerank_depth, options.top_k)
        pool = reranked(pool, query, legs, reranker, result, depth)  # type: ignore[arg-type]
    result.candidates = refined(legs, pool, options)
    return result


def first_round(
    query: str, legs: Legs, services: SearchServices, llm: LLM | None, result: FlowResult
) -> list[Candidate]:
    """Expansion, the variants' rankings and their merge: the fused pool of the query."""
    options = legs.options
    variants = expanded(query, options, llm, result)
    per_variant = options
    if len(variants) > 1 and legs.embedder is not None and options.mode != "lexical":
        try:
            with timed("embed"):  # one embedding call for every variant
                legs.vectors.models.remember_queries(legs.embedder, variants)
        except EmbeddingError as exc:
            if options.strict or options.mode == "dense":
                raise
            per_variant = replace(options, mode="lexical")
            result.reasons.append(f"{exc.code}: {exc.message}")
    rankings = rank_texts(legs, variants, per_variant, services)
    result.mode = rankings[0].mode if per_variant is options else options.mode or "hybrid"
    for ranking in rankings:
        noted(result, ranking)
    if len(rankings) == 1:
        return rankings[0].candidates
    return merge_variants([r.candidates for r in rankings], options.merge, options.rrf_k)


def expanded(
    query: str, options: SearchOptions, llm: LLM | None, result: FlowResult
) -> Sequence[str]:
    """The query and its variants: LLM rephrasings when `expand` is "llm" (the query alone,
    flagged, when the LLM fails or its reply is unusable), the query alone otherwise."""
    variants = [query]
    if options.expand == "prf":
        result.expansion = {"method": "prf", "variants": variants, **vars(options.prf)}
    elif options.expand == "llm":
        reason = None
        try:
            with timed("expand"):
                variants = expand_query(llm, query, options.max_variants)  # type: ignore[arg-type]
        except LLMError as exc:
            if options.strict:
                raise
            reason = f"{exc.code}: {exc.message}"
        except ValueError as exc:
            if options.strict:
                raise LLMFailed(f"query expansion: {exc}") from None
            reason = f"unusable expansion reply: {exc}"
        result.expansion = {"method": "llm", "variants": variants, "fallback": reason is not None}
        if reason is not None:
            result.expansion["reason"] = reason
            result.reasons.append(f"query expansion skipped: {reason}")
    return variants


def hops(
    question: str, first: list[Candidate], legs: Legs, llm: LLM, result: FlowResult
) -> list[Candidate]:
    """The multi-hop loop: each round's refined hits (the first round's `first` pool, then
    the LLM's follow-up query's), accumulated in the order found, each marked with its hop,
    until the LLM says they suffice, a round brings nothing new, or the hop limit."""
    options = replace(legs.options, rerank=False)
    trace, found, tried = HopTrace(), dict[int, Candidate](), [question]
    text, hits = question, refined(legs, first, options)
    for hop in range(1, options.hops + 1):
        if hop > 1:
            ranking = rank_text(legs, text, options)
            noted(result, ranking)
            hits = refined(legs, ranking.candidates, options)
        new = new_in_hop(hits, found, hop)
        stored = legs.snapshot.chunks([c.row_id for c in new])
        new_ids = [stored[c.row_id].chunk_id for c in new if c.row_id in stored]
        trace.hops.append({"hop": hop, "query": text, "new_chunk_ids": new_ids})
        if hop > 1 and not new:
            trace.stopped = "no_new_chunks"
            break
        if hop == options.hops:
            trace.stopped = "hop_limit"
            break
        context = legs.snapshot.chunks(list(found))
        passages = [context[row] for row in found if row in context]
        text = follow_up(llm, question, passages, tried, options.strict, trace)  # type: ignore[assignment]
        if text is None:
            break
        tried.append(text)
    result.hops = trace.to_dict()
    if trace.reason:
        result.reasons.append(f"multi-hop stopped: {trace.reason}")
    return list(found.values())


def noted(result: FlowResult, ranking: Ranking) -> None:
    """Keep what one fused ranking reports: why it is degraded, the floor it applied and the
    candidates that floor dropped (summed over every ranking of the search)."""
    if ranking.degraded and ranking.reason and ranking.reason not in result.reasons:
        result.reasons.append(ranking.reason)
    if result.floor is None:
        result.floor = ranking.floor
    result.below_floor += ranking.below_floor


def reranked(
    pool: list[Candidate],
    query: str,
    legs: Legs,
    reranker: Reranker,
    result: FlowResult,
    depth: int,
) -> list[Candidate]:
    """The best `depth` of the pool re-scored by the reranker against the query (the fused
    order kept, and the search degraded, when the reranker fails)."""
    head = pool[:depth]
    with timed("rerank"):
        stored = legs.snapshot.chunks([c.row_id for c in head])
        texts = [passage_text(stored[c.row_id]) if c.row_id in stored else "" for c in head]
        head, reason = rerank_candidates(head, query, reranker, texts, legs.options.strict)
    result.rerank = {
        "model": reranker.name,
        "candidates": len(head),
        "degraded": reason is not None,
    }
    if reason is not None:
        result.rerank["reason"] = reason
        result.reasons.append(f"rerank skipped: {reason}")
    return head


def refined(legs: Legs, candidates: list[Candidate], options: SearchOptions) -> list[Candidate]:
    """The controls after fusion and the top k (`ragloom.retrieval.ranking.refine`), with
    the candidates' metadata and vectors when the options ask for them, and the stable keys
    of the rows tied at the top k's cut (timed with fusion, whose stage holds them)."""
    with timed("fusion"):
        metadata, vectors = control_data(legs, [c.row_id for c in candidates], options)
        head = refine(candidates, options, metadata, vectors)
        return ordered(head, keys_of(legs, head.tied) if head.tied else {})
