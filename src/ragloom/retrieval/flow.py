"""A search with the steps that need a service: expansion, rerank, multi-hop.

    query -> expand? -> [fuse legs per variant, concurrently] -> merge by chunk
          -> rerank? (best `rerank_depth`) -> refine (boosts, thresholds, diversity, top k)
    hops: each round is the above without rerank; the accumulated chunks are then
          reranked against the original question.

The index supplies the storage-bound pieces as a `Backend` of plain functions, so this
module stays free of storage and models. No service is called unless its step is on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from ragloom.errors import EmbeddingError, InputError, LLMError, LLMFailed
from ragloom.expansion.llm import expand_query
from ragloom.llm import LLM
from ragloom.rerank.base import Reranker
from ragloom.retrieval.hops import run_hops
from ragloom.retrieval.pipeline import Candidate
from ragloom.retrieval.rerank import rerank_candidates
from ragloom.retrieval.search import Ranking, SearchOptions
from ragloom.retrieval.variants import merge_variants
from ragloom.timing import timed

T = TypeVar("T")
R = TypeVar("R")


def _serial(fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
    return [fn(item) for item in items]


@dataclass
class Backend:
    """What a collection offers the flow.

    `fuse(query, options)`: legs + fusion for one query text (PRF inside the lexical leg
    when `options.expand == "prf"`). `refine(candidates, options)`: boosts, thresholds,
    diversity, top k. `chunks(rows)`: row -> stored chunk (`chunk_id`, `text`, `title`).
    `prime(queries)`: embed several queries in one call (raises `EmbeddingError`).
    `map(fn, items)`: run `fn` over items, concurrently if it can.
    """

    fuse: Callable[[str, SearchOptions], Ranking]
    refine: Callable[[list[Candidate], SearchOptions], list[Candidate]]
    chunks: Callable[[list[int]], Mapping[int, Any]]
    prime: Callable[[list[str]], None] = lambda queries: None
    map: Callable[[Callable[[Any], Any], Sequence[Any]], list[Any]] = _serial


@dataclass
class FlowResult:
    """The ranked candidates plus what each step did, and the dense-only floor the fused
    legs had to reach (None: no fusion applied one) with the candidates it dropped."""

    candidates: list[Candidate]
    mode: str
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
    options: SearchOptions,
    backend: Backend,
    llm: LLM | None = None,
    reranker: Reranker | None = None,
) -> FlowResult:
    """Run one search with the steps `options` switch on."""
    check_services(options, llm, reranker)
    result = FlowResult([], options.mode or "lexical")
    pool = _first_round(query, options, backend, llm, result)
    if options.hops > 1:
        per_hop = replace(options, rerank=False)
        first = backend.refine(pool, per_hop)

        def retrieve(follow_up: str) -> list[Candidate]:
            ranking = backend.fuse(follow_up, per_hop)
            _note(result, ranking)
            return backend.refine(ranking.candidates, per_hop)

        found, trace = run_hops(
            query,
            first,
            retrieve,
            backend.chunks,
            llm,
            options.hops,
            options.strict,  # type: ignore[arg-type]
        )
        result.hops = trace.to_dict()
        if trace.reason:
            result.reasons.append(f"multi-hop stopped: {trace.reason}")
        if options.rerank and found:
            found = _rerank(found, query, options, backend, reranker, result, len(found))
            found = backend.refine(found, replace(options, top_k=len(found), diversity=None))
        result.candidates = found
        return result
    if options.rerank:
        depth = max(options.rerank_depth, options.top_k)
        pool = _rerank(pool, query, options, backend, reranker, result, depth)
    result.candidates = backend.refine(pool, options)
    return result


def _note(result: FlowResult, ranking: Ranking) -> None:
    """Keep what one fused ranking reports: why it is degraded, the floor it applied and the
    candidates that floor dropped (summed over every ranking of the search)."""
    if ranking.degraded and ranking.reason and ranking.reason not in result.reasons:
        result.reasons.append(ranking.reason)
    if result.floor is None:
        result.floor = ranking.floor
    result.below_floor += ranking.below_floor


def _first_round(
    query: str, options: SearchOptions, backend: Backend, llm: LLM | None, result: FlowResult
) -> list[Candidate]:
    """Expansion, the variants' searches and their merge: the fused pool of the query."""
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
    per_variant = options
    if len(variants) > 1:
        try:
            backend.prime(variants)  # one embedding call for every variant
        except EmbeddingError as exc:
            if options.strict or options.mode == "dense":
                raise
            per_variant = replace(options, mode="lexical")
            result.reasons.append(f"{exc.code}: {exc.message}")
    rankings = backend.map(lambda text: backend.fuse(text, per_variant), variants)
    result.mode = rankings[0].mode if per_variant is options else options.mode or "hybrid"
    for ranking in rankings:
        _note(result, ranking)
    if len(rankings) == 1:
        return rankings[0].candidates
    return merge_variants([r.candidates for r in rankings], options.merge, options.rrf_k)


def _rerank(
    pool: list[Candidate],
    query: str,
    options: SearchOptions,
    backend: Backend,
    reranker: Reranker | None,
    result: FlowResult,
    depth: int,
) -> list[Candidate]:
    assert reranker is not None

    def texts_of(rows: list[int]) -> list[str]:
        stored = backend.chunks(rows)
        return [_passage_text(stored[row]) if row in stored else "" for row in rows]

    with timed("rerank"):
        head, reason = rerank_candidates(pool, query, reranker, texts_of, depth, options.strict)
    result.rerank = {
        "model": reranker.name,
        "candidates": len(head),
        "degraded": reason is not None,
    }
    if reason is not None:
        result.rerank["reason"] = reason
        result.reasons.append(f"rerank skipped: {reason}")
    return head


def _passage_text(chunk: Any) -> str:
    """What a reranker reads: the document's title, then the chunk's text."""
    title = getattr(chunk, "title", None)
    return f"{title}\n{chunk.text}" if title else chunk.text
