"""One search as configuration: which legs run, how they fuse, what is dropped.

`rank` is the pipeline's core. It takes the legs as functions so that it stays free of
storage and models: legs -> fuse -> thresholds -> top-k, and reports degradation."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ragloom.contract.options import OPTIONS, offered
from ragloom.contract.schema import check_value
from ragloom.errors import InputError, InvalidRequest, NeedsVectors, worded
from ragloom.expansion.rm3 import PRFParams
from ragloom.filters import (
    FilterNode,
    Predicate,
    compile_filter,
    filter_key,
    parse_filter,
    predicate_of,
)
from ragloom.lexical import BM25Params
from ragloom.retrieval import adaptive_ranked, controls, fusion, pipeline
from ragloom.retrieval.controls import MISSING_POLICIES, BoostRule, MetadataOf
from ragloom.retrieval.fusion import DEFAULT_FUSION, DEFAULT_NORMALIZATION
from ragloom.retrieval.pipeline import DENSE, LEXICAL, Candidate
from ragloom.retrieval.side_by_side import Ceiling, Leg, both_legs, lexical_side
from ragloom.retrieval.variants import MERGES
from ragloom.timing import timed

MODES = ("lexical", "dense", "hybrid")
# Settings a collection may give defaults for (`CollectionConfig.search`), and those of them
# that belong to one fusion method (a search naming another method does not take them).
SEARCH_SETTINGS = (
    "fusion",
    "rrf_k",
    "weights",
    "normalization",
    "candidates",
    "min_dense_similarity",
)
FUSION_SETTINGS = ("rrf_k", "weights", "normalization")
EXPANSIONS = ("llm", "prf")
MAX_TOP_K = OPTIONS["top_k"].maximum


def _check_bounds(options: SearchOptions) -> None:
    """The options against their declaration (`ragloom.contract.options`): the same types
    and bounds, and the same words and code (`bad_request`), as on every other interface.
    (Choices keep their own messages below, which hint at the valid ones.)"""
    for option in _BOUNDED:
        value = getattr(options, option.keyword, None)
        if value is not None:
            check_value(option, value, "library")


# The library's options checked by `_check_bounds` (the declaration does not change); bm25
# may be a BM25Params too, and `bm25_for` checks it.
_BOUNDED = tuple(
    o for o in offered("library") if o.kind != "boolean" and o.choices is None and o.name != "bm25"
)


@dataclass(frozen=True)
class SearchOptions:
    """Everything that shapes a search besides the query (validated on construction).

    `mode=None` means hybrid when the collection has vectors, lexical otherwise.
    `strict` turns a failed query embedding into an error instead of a degraded answer.

    The steps that need a service (see `ragloom.retrieval.flow`): `expand` "llm" searches
    the query and up to `max_variants - 1` LLM rephrasings and merges them by chunk
    (`merge` "rrf" or "best"); `expand` "prf" expands the lexical leg with RM3 feedback
    (`prf` settings); `rerank` re-scores the best `rerank_depth` candidates (at least
    `top_k`); `hops` > 1 asks the LLM whether the hits suffice and retrieves its follow-up
    query, up to `hops` rounds. `strict` makes any of them fail loudly too.
    """

    top_k: int = 5
    mode: str | None = None
    fusion: str = DEFAULT_FUSION
    rrf_k: float = 60.0
    weights: Mapping[str, float] = field(default_factory=dict)
    normalization: str = DEFAULT_NORMALIZATION
    candidates: int = 40
    min_dense_similarity: float | None = None  # None: the model's floor (embedding.floors)
    min_score: float | None = None
    bm25: BM25Params | Mapping[str, float] | None = None  # a mapping: k1 and/or b
    strict: bool = False
    filters: Mapping[str, Any] | None = None
    boosts: Sequence[Mapping[str, Any]] = ()
    diversity: Mapping[str, Any] | None = None
    prefer: Sequence[Mapping[str, Any]] = ()
    explain: bool = False
    with_tokens: bool = False
    # Settings the caller left unset, which a collection's own defaults may fill in
    # (`with_defaults`); `Index.search` fills this in, options built directly leave it empty.
    unset: frozenset[str] = field(default=frozenset(), repr=False, compare=False)
    expand: str | None = None
    max_variants: int = 5
    merge: str = "rrf"
    prf: PRFParams = field(default_factory=PRFParams)
    rerank: bool = False
    rerank_depth: int = 30
    hops: int = 1
    llm: Any = field(default=None, repr=False, compare=False)  # this search's own LLM
    reranker: Any = field(default=None, repr=False, compare=False)  # its own reranker
    predicate: Predicate | None = field(default=None, init=False, repr=False, compare=False)
    filter_node: FilterNode | None = field(default=None, init=False, repr=False, compare=False)
    filter_key: str | None = field(default=None, init=False, repr=False, compare=False)
    boost_rules: tuple[BoostRule, ...] = field(default=(), init=False, repr=False, compare=False)
    caps: Mapping[str, int] = field(default_factory=dict, init=False, repr=False, compare=False)
    mmr_lambda: float | None = field(default=None, init=False, repr=False, compare=False)
    cap_missing: str = field(default="keep", init=False, repr=False, compare=False)
    preferences: tuple[Predicate, ...] = field(default=(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        _check_bounds(self)
        if self.mode is not None and self.mode not in MODES:
            raise InvalidRequest(f"unknown mode {self.mode!r}", f"use one of {', '.join(MODES)}")
        if self.fusion not in fusion.FUSIONS:
            raise InvalidRequest(
                f"unknown fusion {self.fusion!r}", f"use one of {', '.join(fusion.FUSIONS)}"
            )
        if self.normalization not in fusion.NORMALIZATIONS:
            raise InvalidRequest(
                f"unknown normalization {self.normalization!r}", "use minmax or zscore"
            )
        fusion._check_weights(self.weights)
        if self.bm25 is not None:
            self.bm25_for(BM25Params())  # a bad k1, b or other key fails here, not mid-search
        if self.filters is not None:
            node = parse_filter(self.filters)
            object.__setattr__(self, "filter_node", node)
            object.__setattr__(self, "filter_key", filter_key(self.filters))
            object.__setattr__(self, "predicate", predicate_of(node))
        if not isinstance(self.boosts, Sequence) or isinstance(self.boosts, (str, bytes)):
            raise InputError("boosts must be a list of rules")
        object.__setattr__(self, "boost_rules", tuple(BoostRule.parse(b) for b in self.boosts))
        if not isinstance(self.prefer, Sequence) or isinstance(self.prefer, (str, bytes)):
            raise InputError("prefer must be a list of filters")
        object.__setattr__(self, "preferences", tuple(compile_filter(f) for f in self.prefer))
        if self.expand is not None and self.expand not in EXPANSIONS:
            raise InvalidRequest(f"unknown expansion {self.expand!r}", "use llm or prf")
        if self.merge not in MERGES:
            raise InvalidRequest(f"unknown variant merge {self.merge!r}", "use rrf or best")
        if not isinstance(self.prf, PRFParams):
            raise InputError("prf must be a PRFParams")
        caps, mmr, missing = parse_diversity(self.diversity)
        object.__setattr__(self, "caps", caps)
        object.__setattr__(self, "mmr_lambda", mmr)
        object.__setattr__(self, "cap_missing", missing)

    def with_defaults(self, stored: Mapping[str, Any]) -> SearchOptions:
        """These options with the unset settings taken from a collection's `stored` defaults
        (its weights, normalization and k only when it uses the same fusion method)."""
        if not self.unset or not stored:
            return self
        method = stored.get("fusion", self.fusion) if "fusion" in self.unset else self.fusion
        changes = {
            key: value
            for key, value in stored.items()
            if key in self.unset
            and not (key in FUSION_SETTINGS and stored.get("fusion", method) != method)
        }
        return replace(self, **changes, unset=frozenset())

    def bm25_for(self, stored: BM25Params) -> BM25Params:
        """The BM25 parameters of this search over a collection with `stored` ones: a partial
        `bm25` ({"k1": 1.2}) keeps the collection's other setting."""
        if self.bm25 is None or isinstance(self.bm25, BM25Params):
            return self.bm25 or stored
        if not isinstance(self.bm25, Mapping) or not set(self.bm25) <= {"k1", "b"}:
            raise InputError(
                f"bm25 takes k1 and b, got {self.bm25!r}", 'e.g. bm25={"k1": 1.2, "b": 0.75}'
            )
        for name, value in self.bm25.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise InputError(f"bm25 {name} must be a number, got {value!r}")
        return replace(stored, **{k: float(v) for k, v in self.bm25.items()})

    @property
    def reorders(self) -> bool:
        """True when stages after fusion may reorder or drop hits (so legs fetch deeper)."""
        return bool(
            self.boost_rules
            or self.caps
            or self.mmr_lambda is not None
            or self.rerank
            or self.expand == "llm"
        )

    @property
    def pool_depth(self) -> int:
        """How many fused candidates the legs must supply when later stages reorder."""
        return max(self.candidates, self.top_k, self.rerank_depth if self.rerank else 0)

    @property
    def uses_services(self) -> bool:
        """True when a step beyond the legs runs: LLM expansion, PRF, rerank or hops."""
        return self.expand is not None or self.rerank or self.hops > 1


def parse_diversity(
    spec: Mapping[str, Any] | None,
) -> tuple[dict[str, int], float | None, str]:
    """`{"max_per": {"scholar_id": 2}, "missing": "keep", "mmr": {"lambda": 0.7}}` ->
    (caps, mmr lambda, what caps do with hits lacking the key: "keep" or "group")."""
    if spec is None:
        return {}, None, "keep"
    if not isinstance(spec, Mapping):
        raise InvalidRequest("diversity must be an object like {'max_per': {'scholar_id': 2}}")
    unknown = set(spec) - {"max_per", "missing", "mmr"}
    if unknown:
        raise InvalidRequest(
            f"unknown diversity control(s): {', '.join(sorted(unknown))}",
            "use max_per (with missing), and/or mmr",
        )
    missing = spec.get("missing", "keep")
    if missing not in MISSING_POLICIES:
        raise InvalidRequest(
            f"diversity.missing must be one of {', '.join(MISSING_POLICIES)}, got {missing!r}",
            '"keep": hits without the key are never capped; "group": they share one cap',
        )
    caps = spec.get("max_per") or {}
    if not isinstance(caps, Mapping):
        raise InvalidRequest("diversity.max_per must map metadata keys to counts")
    for key, limit in caps.items():
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise InvalidRequest(f"max_per[{key!r}] must be a positive integer, got {limit!r}")
    mmr = spec.get("mmr")
    lam = None
    if mmr is not None:
        lam = mmr.get("lambda", 0.7) if isinstance(mmr, Mapping) else mmr
        if isinstance(lam, bool) or not isinstance(lam, (int, float)) or not 0 <= lam <= 1:
            raise InvalidRequest(f"mmr lambda must be a number between 0 and 1, got {lam!r}")
    return dict(caps), (float(lam) if lam is not None else None), missing


@dataclass
class Ranking:
    """The ranked candidates of one search, whether a leg was missing, and the dense-only
    floor that applied (None: none) with how many fused candidates fell below it."""

    candidates: list[Candidate]
    mode: str
    degraded: bool = False
    reason: str | None = None
    floor: float | None = None
    below_floor: int = 0
    options: SearchOptions | None = None  # as applied (with the collection's defaults)


def rank(
    query: str,
    options: SearchOptions,
    lexical: Leg,
    dense: Leg | None,
    metadata_of: MetadataOf | None = None,
    vectors_of: Callable[[list[int]], np.ndarray] | None = None,
    dense_floor: float | None = None,
    ceiling: Ceiling | None = None,
    profile: Mapping[str, Any] | None = None,
    keys_of: pipeline.KeysOf | None = None,
) -> Ranking:
    """Run the legs the mode asks for, fuse, then boost, threshold, diversify, keep top k
    (ties in the order of `keys_of`, `ragloom.retrieval.pipeline.top_k`).

    The legs apply any filter themselves. `metadata_of` serves boosts and caps;
    `vectors_of` serves MMR. `dense_floor` is the model's floor for dense-only hits, used
    when the options give none (`min_dense_similarity=None`). `ceiling` gives the query's
    BM25 ceiling and `profile` the collection's probe profile (`ragloom.retrieval.adaptive`).
    """
    ranking = fuse_legs(query, options, lexical, dense, metadata_of, dense_floor, ceiling, profile)
    with timed("fusion"):
        ranking.candidates = refine(ranking.candidates, options, metadata_of, vectors_of, keys_of)
    return ranking


def fuse_legs(
    query: str,
    options: SearchOptions,
    lexical: Leg,
    dense: Leg | None,
    metadata_of: MetadataOf | None = None,
    dense_floor: float | None = None,
    ceiling: Ceiling | None = None,
    profile: Mapping[str, Any] | None = None,
    beside: Callable[[str], bool] | None = None,
) -> Ranking:
    """The legs and their fusion (with the weak dense-only hits dropped: below the options'
    floor, else the model's `dense_floor`), before `refine`. A search of one leg scores its
    hits by that leg's share (`ragloom.retrieval.adaptive`): BM25 over the query's ceiling,
    or the cosine (0 when negative); the leg's raw score stays in `lexical_score` /
    `dense_score`. `beside(query)` says whether a hybrid search runs its two legs side by
    side: the lexical leg on another core, the dense leg here
    (`ragloom.retrieval.side_by_side`)."""
    mode = options.mode or ("hybrid" if dense is not None else "lexical")
    if mode != "lexical" and dense is None:
        raise NeedsVectors(
            f"{mode} search needs vectors, and this collection has none",
            hints=worded("give it vectors with {reembed}, or search with {lexical}"),
        )
    if not pipeline.asks_anything(query):  # no leg has anything to match (a dense model without a
        return Ranking([], mode)  # floor ranked every chunk for "???", at cosine about 0)
    deep = mode == "hybrid" or options.reorders
    depth = options.pool_depth if deep else options.top_k
    degraded, reason, floor, below, top = False, None, None, 0, None
    if not deep:  # one leg cut at top k: fetch the ties at the cut too (one total order)
        lexical = _through_ties(lexical, options.top_k)
        dense = _through_ties(dense, options.top_k) if dense is not None else None
    if mode == "dense":
        ranked = adaptive_ranked.alone_ranked(DENSE, dense(query, depth), None)  # type: ignore[misc]
    elif mode == "lexical":
        found, top = lexical_side(lexical, ceiling, query, depth)
        ranked = adaptive_ranked.alone_ranked(LEXICAL, found, top)
    else:
        started = bool(beside and beside(query))
        found, top, answer, failed = both_legs(lexical, dense, ceiling, query, depth, started)  # type: ignore[arg-type]
        if failed is not None:
            if options.strict:
                raise failed
            degraded, reason = True, f"{failed.code}: {failed.message}"
            ranked = adaptive_ranked.alone_ranked(LEXICAL, found, top)  # the lexical leg alone
        else:
            with timed("fusion"):
                floor = options.min_dense_similarity
                floor = dense_floor if floor is None else floor
                ranked, below = fusion.fuse_legs_head(
                    found,
                    answer,
                    options.fusion,
                    options.rrf_k,
                    options.weights,
                    options.normalization,
                    _preference_scorer(options, metadata_of),
                    top,
                    profile,
                    floor,
                    None if options.reorders else options.top_k,  # what `refine` keeps
                )
    return Ranking(ranked, mode, degraded, reason, floor=floor, below_floor=below)


def _through_ties(leg: Leg, k: int) -> Leg:
    return lambda text, _depth: pipeline.through_ties(leg, text, k, MAX_TOP_K)


def _preference_scorer(
    options: SearchOptions, metadata_of: MetadataOf | None
) -> Callable[[int], float] | None:
    """row -> share of the `prefer` filters its metadata matches (None without rules)."""
    if not options.preferences or metadata_of is None:
        return None
    rules = options.preferences
    return lambda row: sum(rule(metadata_of(row)) for rule in rules) / len(rules)


def refine(
    candidates: list[Candidate],
    options: SearchOptions,
    metadata_of: MetadataOf | None,
    vectors_of: Callable[[list[int]], np.ndarray] | None,
    keys_of: pipeline.KeysOf | None = None,
) -> list[Candidate]:
    """Boost -> minimum score -> per-key caps -> MMR -> top k (ties by `keys_of`)."""
    if options.boost_rules or options.caps:
        if metadata_of is None:
            raise InputError("boosts and caps need chunk metadata")
        candidates = controls.apply_boosts(candidates, options.boost_rules, metadata_of)
    candidates = pipeline.apply_min_score(candidates, options.min_score)
    if options.caps:
        candidates = controls.cap_per_key(
            candidates,
            options.caps,
            metadata_of,  # type: ignore[arg-type]
            options.cap_missing,
        )
    if options.mmr_lambda is not None:
        if vectors_of is None:
            raise NeedsVectors(
                "MMR diversity needs vectors, and this collection has none",
                hints=worded("give it vectors with {reembed}, or leave out mmr"),
            )
        pool = candidates[: options.pool_depth]
        vectors = vectors_of([c.row_id for c in pool])
        return controls.maximal_marginal_relevance(pool, vectors, options.top_k, options.mmr_lambda)
    return pipeline.top_k(candidates, options.top_k, keys_of)
