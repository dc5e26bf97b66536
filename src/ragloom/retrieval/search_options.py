"""One search as configuration (`SearchOptions`): which legs run, how they fuse, what the
controls after fusion do, which steps run; checked once, when the options are built."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ragloom.contract.options import offered
from ragloom.contract.schema import check_value
from ragloom.errors import InputError, InvalidRequest
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
from ragloom.retrieval import fusion
from ragloom.retrieval.controls import MISSING_POLICIES, BoostRule
from ragloom.retrieval.fusion import DEFAULT_FUSION, DEFAULT_NORMALIZATION
from ragloom.retrieval.variants import MERGES

MODES = ("lexical", "dense", "hybrid")
# The settings a collection may give defaults for (`CollectionConfig.search`) that belong to
# one fusion method (a search naming another method does not take them).
FUSION_SETTINGS = ("rrf_k", "weights", "normalization")
EXPANSIONS = ("llm", "prf")


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

    The steps that need a service (see `ragloom.engine.steps`): `expand` "llm" searches
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
        fusion.check_weights(self.weights)
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
